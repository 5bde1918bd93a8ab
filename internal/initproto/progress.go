package initproto

import (
	"bytes"
	"context"
	"strconv"
	"time"
)

// Progress of a running call. A Call whose Progress is set (the least
// milliseconds between two reports) gets progress frames from boxsh-init
// while it runs, {"id":N,"progress":BYTES}: the bytes of output (stdout
// and stderr, the part over the cap included) its command has written so
// far. They stop before the Reply. Calls that did not ask get none, and
// pay nothing for them.

// progressInfix follows the id in an encoded progress frame.
var progressInfix = []byte(`,"progress":`)

// EncodeProgress encodes a progress frame: call id has written n bytes
// of output so far.
func EncodeProgress(id uint64, n uint64) []byte {
	b := append(strconv.AppendUint(append(make([]byte, 0, 48), replyPrefix...), id, 10), progressInfix...)
	return append(strconv.AppendUint(b, n, 10), '}')
}

// DecodeProgress decodes a frame that EncodeProgress wrote.
//
// ok is false for any other frame (a Reply or a notice), after looking at no
// more than its first few bytes.
func DecodeProgress(payload []byte) (id, n uint64, ok bool) {
	rest, found := bytes.CutPrefix(payload, replyPrefix)
	if !found {
		return 0, 0, false
	}
	i := 0
	for i < len(rest) && i <= 20 && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || !bytes.HasPrefix(rest[i:], progressInfix) || !bytes.HasSuffix(rest, []byte("}")) {
		return 0, 0, false
	}
	id, err := strconv.ParseUint(string(rest[:i]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	n, err = strconv.ParseUint(string(rest[i+len(progressInfix):len(rest)-1]), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return id, n, true
}

// OnProgress receives the bytes of output a call has written so far. It
// runs on the goroutine that reads the channel, and must not block.
type OnProgress func(bytes uint64)

// progressKey is the context key of a call's progress request.
type progressKey struct{}

// progressRequest is what WithProgress puts in a context.
type progressRequest struct {
	every time.Duration
	fn    OnProgress
}

// WithProgress returns a context for Client.Start that asks boxsh-init for
// progress frames, handed to fn.
//
// It works for any backend that passes its context on to Client.Start. Frames
// come at most one every every, which is at least a millisecond.
func WithProgress(ctx context.Context, every time.Duration, fn OnProgress) context.Context {
	return context.WithValue(ctx, progressKey{}, progressRequest{every: max(every, time.Millisecond), fn: fn})
}

// progressOf returns the progress request of ctx: the milliseconds
// between reports (0: none asked) and where they go.
func progressOf(ctx context.Context) (int64, OnProgress) {
	r, ok := ctx.Value(progressKey{}).(progressRequest)
	if !ok || r.fn == nil {
		return 0, nil
	}
	return r.every.Milliseconds(), r.fn
}

// ProgressAsked tells whether ctx was made by WithProgress: its call asks
// for progress frames.
func ProgressAsked(ctx context.Context) bool {
	every, _ := progressOf(ctx)
	return every > 0
}
