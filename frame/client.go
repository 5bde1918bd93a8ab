package frame

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrClosed reports a call that cannot complete because the channel to
// boxsh-init ended.
var ErrClosed = errors.New("boxsh-init is gone")

// Client is the front's end of the channel: it sends Calls and matches the
// Replies that come back, in any order.
type Client struct {
	w *Writer

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan Reply
	err     error // set once the channel ended
	done    chan struct{}
}

// NewClient starts reading replies from conn. Close conn (or let the other
// side end it) to stop; pending calls then fail with ErrClosed.
func NewClient(conn io.ReadWriter) *Client {
	c := &Client{w: NewWriter(conn), pending: make(map[uint64]chan Reply), done: make(chan struct{})}
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
		ch, ok := c.pending[rep.ID]
		delete(c.pending, rep.ID)
		c.mu.Unlock()
		if ok {
			ch <- rep
		}
	}
	if errors.Is(err, io.EOF) {
		err = ErrClosed
	} else {
		err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	c.mu.Lock()
	c.err = err
	for id, ch := range c.pending {
		delete(c.pending, id)
		close(ch)
	}
	c.mu.Unlock()
	close(c.done)
}

// Pending is a call sent to boxsh-init and not yet answered.
type Pending struct {
	c   *Client
	ctx context.Context
	id  uint64
	ch  chan Reply
}

// Start sends a call to boxsh-init without waiting for the reply: calls
// reach boxsh-init in the order Start is called. Cancelling ctx before the
// reply arrives asks boxsh-init to stop the call.
func (c *Client) Start(ctx context.Context, name string, args json.RawMessage) (*Pending, error) {
	ch := make(chan Reply, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()

	if err := c.w.WriteJSON(Call{ID: id, Tool: name, Args: args}); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("send call: %w", err)
	}
	return &Pending{c: c, ctx: ctx, id: id, ch: ch}, nil
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
		if rep.Error != nil {
			return nil, rep.Error
		}
		return rep.Result, nil
	case <-p.ctx.Done():
		p.c.forget(p.id)
		_ = p.c.w.WriteJSON(Call{ID: p.id, Cancel: true})
		return nil, p.ctx.Err()
	}
}

// Call sends a call and waits for its result.
func (c *Client) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	p, err := c.Start(ctx, name, args)
	if err != nil {
		return nil, err
	}
	return p.Wait()
}

func (c *Client) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}
