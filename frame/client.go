package frame

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sync/semaphore"
)

// ErrClosed reports a call that cannot complete because the channel to
// boxsh-init ended.
var ErrClosed = errors.New("boxsh-init is gone")

// DefaultBudget is the default memory budget of unreleased results.
const DefaultBudget = 64 << 20

// Client is the front's end of the channel: it sends Calls and matches the
// Replies that come back, in any order.
//
// Results count against a memory budget from the moment they are read until
// their Pending is released; while the budget is spent the Client reads no
// more replies, so boxsh-init blocks instead of the front piling up results
// that a stalled client does not read.
type Client struct {
	w    *Writer
	held *semaphore.Weighted
	max  int64

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*Pending
	err     error // set once the channel ended
	done    chan struct{}
}

// NewClient starts reading replies from conn, holding at most budget bytes
// of unreleased results (DefaultBudget if budget <= 0). Close conn (or let
// the other side end it) to stop; pending calls then fail with ErrClosed.
func NewClient(conn io.ReadWriter, budget int64) *Client {
	if budget <= 0 {
		budget = DefaultBudget
	}
	c := &Client{
		w: NewWriter(conn), held: semaphore.NewWeighted(budget), max: budget,
		pending: make(map[uint64]*Pending), done: make(chan struct{}),
	}
	go c.readLoop(NewReader(conn))
	return c
}

// Done is closed when the channel has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

func (c *Client) readLoop(r *Reader) {
	var err error
	for {
		var payload []byte
		if payload, err = r.Read(); err != nil {
			break
		}
		var rep Reply
		if rep, err = DecodeReply(payload); err != nil {
			break
		}
		c.mu.Lock()
		p, ok := c.pending[rep.ID]
		delete(c.pending, rep.ID)
		c.mu.Unlock()
		if !ok {
			continue // cancelled or released meanwhile
		}
		rep.size = min(int64(len(payload)), c.max)
		_ = c.held.Acquire(context.Background(), rep.size)
		p.ch <- rep
	}
	if errors.Is(err, io.EOF) {
		err = ErrClosed
	} else {
		err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	c.mu.Lock()
	c.err = err
	for id, p := range c.pending {
		delete(c.pending, id)
		close(p.ch)
	}
	c.mu.Unlock()
	close(c.done)
}

// Pending is a call sent to boxsh-init.
type Pending struct {
	c   *Client
	ctx context.Context
	id  uint64
	ch  chan Reply // receives the reply once, or is closed

	once sync.Once
	got  bool  // Wait received the reply
	size int64 // budget the received reply holds
}

// Start sends a call to boxsh-init without waiting for the reply: calls
// reach boxsh-init in the order Start is called. Cancelling ctx before the
// reply arrives asks boxsh-init to stop the call.
func (c *Client) Start(ctx context.Context, name string, args json.RawMessage) (*Pending, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.nextID++
	p := &Pending{c: c, ctx: ctx, id: c.nextID, ch: make(chan Reply, 1)}
	c.pending[p.id] = p
	c.mu.Unlock()

	if err := c.w.WriteJSON(Call{ID: p.id, Tool: name, Args: args}); err != nil {
		p.Release()
		return nil, fmt.Errorf("send call: %w", err)
	}
	return p, nil
}

// Wait returns the call's encoded result. When the call's context is
// cancelled first, Wait sends a cancel frame and returns ctx.Err(). A
// protocol fault comes back as *Error.
func (p *Pending) Wait() (json.RawMessage, error) {
	select {
	case rep, ok := <-p.ch:
		if !ok {
			p.c.mu.Lock()
			err := p.c.err
			p.c.mu.Unlock()
			return nil, err
		}
		p.got, p.size = true, rep.size
		if rep.Error != nil {
			return nil, rep.Error
		}
		return rep.Result, nil
	case <-p.ctx.Done():
		_ = p.c.w.WriteJSON(Call{ID: p.id, Cancel: true})
		return nil, p.ctx.Err()
	}
}

// Release returns the reply's memory to the Client's budget once the result
// has been used. It may be called more than once, and without Wait.
func (p *Pending) Release() {
	p.once.Do(func() {
		if p.got {
			p.c.held.Release(p.size)
			return
		}
		p.c.mu.Lock()
		_, waiting := p.c.pending[p.id]
		delete(p.c.pending, p.id)
		p.c.mu.Unlock()
		if waiting {
			return // the reply, if it comes, is dropped unread
		}
		// The reader has taken the reply and is handing it over.
		if rep, ok := <-p.ch; ok {
			p.c.held.Release(rep.size)
		}
	})
}
