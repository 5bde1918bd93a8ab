package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/boxsh/boxsh/internal/initproto"
)

// Progress (MCP basic/utilities/progress, 2024-11-05 on; 2026-07-28
// basic/patterns/progress): a request whose _meta carries a progressToken
// gets notifications/progress while its call runs, about one every
// progressEvery, with the seconds elapsed as progress (it only grows), and
// for bash the bytes of output so far, which boxsh-init reports at the
// same rate. They stop before the answer and after a cancellation. On
// HTTP they need an SSE answer; a client that takes only JSON gets none.

// progressEvery is the least time between two progress notifications.
var progressEvery = time.Second

// metaProgressToken returns the progressToken of a request's _meta (a
// string or a number), or nil.
func metaProgressToken(meta json.RawMessage) json.RawMessage {
	if !bytes.Contains(meta, []byte(`"progressToken"`)) {
		return nil
	}
	var m struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	return validProgressToken(m.ProgressToken)
}

// validProgressToken returns t, a decoded progressToken, if it is a
// string or a number; else nil.
func validProgressToken(t json.RawMessage) json.RawMessage {
	if len(t) == 0 || (t[0] != '"' && t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
		return nil
	}
	return t
}

// startProgress sends progress notifications for token until stop is
// called or ctx ends. stop waits for a notification being written, so
// none follows it.
//
// The notifications go out in one of two ways:
//   - When output is set (bash calls), the returned context asks the
//     backend for the bytes of output so far (initproto.WithProgress).
//     Each report then brings a notification that says them, one every
//     progressEvery.
//   - Without reports (other tools, or a backend that sends none), a
//     notification of the time alone goes out once no other has for a
//     little over progressEvery.
func (ss *peer) startProgress(ctx context.Context, token json.RawMessage, output bool) (context.Context, func()) {
	if token == nil {
		return ctx, func() {}
	}
	p := &progress{ss: ss, ctx: ctx, token: token, start: time.Now(), bytes: -1}
	first := progressEvery
	if output {
		ctx = initproto.WithProgress(ctx, progressEvery, p.report)
		first = fallbackAfter() // the first report leads
	}
	p.mu.Lock()
	p.fallback = time.AfterFunc(first, p.tick)
	p.mu.Unlock()
	return ctx, p.stop
}

// progress is the state of one request's progress notifications.
type progress struct {
	ss    *peer
	ctx   context.Context
	token json.RawMessage
	start time.Time

	mu       sync.Mutex
	fallback *time.Timer
	last     time.Time // of the last notification; zero before the first
	bytes    int64     // of output so far; -1 before the first report
	stopped  bool
}

// fallbackAfter is how long after the last notification one goes out with
// no report. It is later than the next report, so that reports lead. Once
// reports come, a notification without one goes out only when a report is
// a whole period late (a stalled backend).
func fallbackAfter() time.Duration { return progressEvery + progressEvery/4 }

// tick sends a notification of the time alone (and the bytes last
// reported, if any).
func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.send(time.Now())
}

// report records a report of n bytes of output and sends a notification
// of it. It sends none if one went out less than three quarters of
// progressEvery ago, since the backend reports no more often than every
// progressEvery.
func (p *progress) report(n uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bytes = int64(min(n, 1<<62))
	now := time.Now()
	if p.stopped || (!p.last.IsZero() && now.Sub(p.last) < progressEvery-progressEvery/4) {
		return
	}
	p.send(now)
}

// send writes a notification; p.mu is held.
func (p *progress) send(now time.Time) {
	if p.bytes >= 0 {
		p.fallback.Reset(2 * progressEvery)
	} else {
		p.fallback.Reset(fallbackAfter())
	}
	if p.ctx.Err() != nil {
		return
	}
	p.last = now
	_ = p.ss.out.notify(p.encode(now.Sub(p.start)))
}

// encode encodes the notification after elapsed: progress is the seconds
// elapsed (it only grows); the message and, when reported, _meta say the
// bytes of output.
func (p *progress) encode(elapsed time.Duration) []byte {
	b := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`)
	b = append(b, p.token...)
	b = append(b, `,"progress":`...)
	b = strconv.AppendFloat(b, float64(elapsed.Milliseconds())/1000, 'f', -1, 64)
	b = append(b, `,"message":"running for `...)
	b = strconv.AppendInt(b, int64(elapsed/time.Second), 10)
	b = append(b, 's')
	if p.bytes >= 0 {
		b = append(b, `, `...)
		b = strconv.AppendInt(b, p.bytes, 10)
		b = append(b, ` bytes of output"`...)
		b = append(b, `,"_meta":{"`+metaOutputBytes+`":`...)
		b = strconv.AppendInt(b, p.bytes, 10)
		b = append(b, '}')
	} else {
		b = append(b, '"')
	}
	return append(b, `}}`...)
}

// metaOutputBytes is the _meta key of a progress notification that holds
// the bytes of output so far.
const metaOutputBytes = "com.github.boxsh/outputBytes"

// stop ends the notifications; none is being written when it returns.
func (p *progress) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	p.fallback.Stop()
}
