package bash

import (
	"context"
	"io"
	"sync/atomic"
)

// counterKey is the context key of a call's output counter.
type counterKey struct{}

// WithOutputCounter returns a context for Run or RunHold that has the call add
// to n every byte its command writes to stdout or stderr, as they are read.
//
// Bytes over the cap are counted too. So someone may watch a long command's
// output grow.
func WithOutputCounter(ctx context.Context, n *atomic.Uint64) context.Context {
	return context.WithValue(ctx, counterKey{}, n)
}

// counted returns r counting into ctx's output counter, or r itself when
// ctx has none.
func counted(ctx context.Context, r io.Reader) io.Reader {
	n, _ := ctx.Value(counterKey{}).(*atomic.Uint64)
	if n == nil {
		return r
	}
	return &countingReader{r: r, n: n}
}

// countingReader adds what it reads to n.
type countingReader struct {
	r io.Reader
	n *atomic.Uint64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	if k > 0 {
		c.n.Add(uint64(k))
	}
	return k, err
}
