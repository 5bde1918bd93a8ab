package toolhost

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/toolhost/bash"
)

// minProgressEvery bounds how often a call may ask for progress frames.
const minProgressEvery = 10 * time.Millisecond

// startProgress sends call id's progress frames while it runs, one every
// every milliseconds, if the front asked for them (every > 0). Each frame
// gives the bytes of output of its command so far, 0 for other tools. It
// returns the call's context, which counts the output, and a stop. stop
// returns once no frame is being written, so none follows the reply.
func (s *serving) startProgress(ctx context.Context, id uint64, every int64) (context.Context, func()) {
	if every <= 0 {
		return ctx, func() {}
	}
	var n atomic.Uint64
	ctx = bash.WithOutputCounter(ctx, &n)
	ticker := time.NewTicker(max(time.Duration(every)*time.Millisecond, minProgressEvery))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
				if err := s.w.Write(initproto.EncodeProgress(id, n.Load())); err != nil {
					return
				}
			}
		}
	})
	return ctx, func() { close(done); wg.Wait() }
}
