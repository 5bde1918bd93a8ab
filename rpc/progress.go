package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// Progress (MCP basic/utilities/progress, 2024-11-05 on; 2026-07-28
// basic/patterns/progress): a request whose _meta carries a progressToken
// gets notifications/progress while its call runs, at most one every
// progressEvery, with the seconds elapsed as progress (it only grows).
// They stop before the answer and after a cancellation. On HTTP they need
// an SSE answer; a client that takes only JSON gets none.

// progressEvery is the least time between two progress notifications.
var progressEvery = time.Second

// progressToken returns params._meta.progressToken (a string or a number),
// or nil.
func progressToken(params json.RawMessage) json.RawMessage {
	if !bytes.Contains(params, []byte(`"progressToken"`)) {
		return nil
	}
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	t := p.Meta.ProgressToken
	if len(t) == 0 || (t[0] != '"' && t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
		return nil
	}
	return t
}

// startProgress sends progress notifications for token until stop is
// called or ctx ends; stop waits for a notification being written, so
// none follows it.
func (ss *session) startProgress(ctx context.Context, token json.RawMessage) (stop func()) {
	if token == nil {
		return func() {}
	}
	start := time.Now()
	var mu sync.Mutex
	stopped := false
	ticker := time.NewTicker(progressEvery)
	done := make(chan struct{})
	go func() {
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-ticker.C:
				secs := now.Sub(start).Seconds()
				b := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`)
				b = append(b, token...)
				b = append(b, `,"progress":`...)
				b = strconv.AppendFloat(b, float64(now.Sub(start).Milliseconds())/1000, 'f', -1, 64)
				b = append(b, `,"message":"running for `...)
				b = strconv.AppendInt(b, int64(secs), 10)
				b = append(b, `s"}}`...)
				mu.Lock()
				if !stopped && ctx.Err() == nil {
					_ = ss.out.notify(b)
				}
				mu.Unlock()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			stopped = true
			mu.Unlock()
			close(done)
		})
	}
}
