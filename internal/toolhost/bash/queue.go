package bash

import (
	"context"
	"errors"
)

// Ticket is a call's place in line for a worker.
type Ticket struct {
	ch        chan *worker // receives the worker, once
	abandoned bool         // guarded by Pool.mu
	started   func()       // see OnStart; set under Pool.mu before ch receives
	granted   func()       // see OnGranted; likewise
}

// OnGranted tells whether ticket t is still in line for a worker. If it
// is, granted is called once the ticket has its worker (RunHold with it
// then does not wait), with the pool's lock held: it must not block, and
// may start the goroutine that runs the call. A call waiting in line thus
// needs no goroutine of its own.
func (p *Pool) OnGranted(t *Ticket, granted func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(t.ch) > 0 {
		return false
	}
	t.granted = granted
	return true
}

// OnStart tells whether ticket t is still in line for a worker. If it is,
// started is called when the call gets its worker, before the command
// runs (see RunHold).
func (p *Pool) OnStart(t *Ticket, started func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(t.ch) > 0 {
		return false
	}
	t.started = started
	return true
}

// worker is one of the Workers places for a running call.
type worker struct{}

// errPoolClosed is the warm shell of a call the pool was closed under.
var errPoolClosed = errors.New("bash: pool closed")

// Reserve takes a place in line for a worker without waiting. Places are
// served in the order Reserve is called; pass the ticket to Run.
func (p *Pool) Reserve() *Ticket {
	t := &Ticket{ch: make(chan *worker, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 && len(p.free) > 0 {
		w := p.free[0]
		p.free = p.free[1:]
		t.ch <- w
	} else {
		p.queue = append(p.queue, t)
	}
	return t
}

// queued tells whether calls wait for a worker.
func (p *Pool) queued() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue) > 0
}

// release hands a worker to the next caller in line, or back to the pool.
func (p *Pool) release(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.workers.Done()
		return
	}
	for len(p.queue) > 0 {
		t := p.queue[0]
		// The slot let go of: a ticket left in the array would keep its
		// call's state (closures, context) alive after the call.
		p.queue[0] = nil
		p.queue = p.queue[1:]
		if !t.abandoned {
			t.ch <- w
			if t.granted != nil {
				t.granted()
			}
			return
		}
	}
	p.free = append(p.free, w)
}

// Abandon gives up a ticket that will not be run.
func (p *Pool) Abandon(t *Ticket) {
	if t != nil {
		p.abandon(t)
	}
}

// abandon gives up a ticket's place in line (and its worker, if it was
// already handed one).
func (p *Pool) abandon(t *Ticket) {
	p.mu.Lock()
	t.abandoned = true
	p.mu.Unlock()
	select {
	case w := <-t.ch:
		p.release(w)
	default:
	}
}

// acquire waits for the ticket's worker.
func (p *Pool) acquire(ctx context.Context, t *Ticket) (*worker, error) {
	select {
	case w := <-t.ch:
		return w, nil
	case <-ctx.Done():
	case <-p.done:
	}
	p.abandon(t)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, errors.New("bash: pool closed")
}
