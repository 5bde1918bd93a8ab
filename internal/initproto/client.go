package initproto

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// ErrClosed reports a call that cannot complete because the channel to
// boxsh-init ended.
var ErrClosed = errors.New("boxsh-init is gone")

// ErrNotSent marks an error of Client.Start after which boxsh-init cannot have
// run the call.
//
// The channel had ended, or the call could not be sent whole. Such a call may
// be sent again to a new boxsh-init.
var ErrNotSent = errors.New("call not sent")

// ErrNotStarted marks the ErrClosed of a call that boxsh-init had queued but
// not started when the channel ended. Such a call may be sent again to a new
// boxsh-init.
var ErrNotStarted = errors.New("call not started")

// Done receives the outcome of a call: its encoded result, or an error (a
// protocol fault as *Error).
type Done func(result json.RawMessage, err error)

// Client is the front's end of the channel. It sends Calls and matches the
// Replies that come back, in any order.
//
// Each reply is handed to its call's Done on the goroutine that reads the
// channel, with no hand-over to another goroutine on the way to the client.
// While a Done runs, no other reply is read. So a Done that blocks, on a
// client that stops reading, makes boxsh-init block too, instead of the front
// piling up results in memory.
type Client struct {
	w   *Writer
	cfg ClientConfig

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*call
	err     error // set once the channel ended
	done    chan struct{}
}

// call is a call sent and not yet finished.
type call struct {
	id     uint64
	done   Done
	stop   func() bool // stops the call's context.AfterFunc; nil until set
	queued bool        // boxsh-init said it waits for a worker, and no more
	// progress receives the call's progress frames; nil when none asked.
	progress OnProgress
}

// finish hands the outcome to the call's Done.
func (p call) finish(result json.RawMessage, err error) {
	if p.stop != nil {
		p.stop()
	}
	p.done(result, err)
}

// ClientConfig configures a Client.
type ClientConfig struct {
	// Hello is the front's hello, sent before any call; boxsh-init's
	// must be the same (see CheckHello).
	Hello Hello
	// Setup is what the hello tells boxsh-init besides (see Setup).
	Setup Setup
	// InitName names boxsh-init in errors ("boxsh-init at /usr/bin/boxsh-init").
	InitName string
	// Log receives the faults of boxsh-init's replies.
	Log hclog.Logger
	// WriteCall writes each call's frame; nil is (*Writer).WriteCall. The
	// front's is largecall.WriteCall, which frames a call with large
	// arguments without json.Marshal's check and copy of them.
	WriteCall func(*Writer, Call) error
}

// NewClient sends the front's hello, with cfg.Setup, on conn and starts
// reading replies from it. Close conn (or let the other side end it) to
// stop; pending calls then finish with ErrClosed.
//
// The first frame boxsh-init sends must be its hello, the same as the
// front's: else the channel ends (and conn is closed, if it is an
// io.Closer) with a *MismatchError, which every pending call gets.
// boxsh-init sends its hello as soon as it starts, so that the check costs
// no wait: the client's first call is sent at once, and boxsh-init refuses
// it too if the front's hello is not its own.
func NewClient(conn io.ReadWriter, cfg ClientConfig) *Client {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.InitName == "" {
		cfg.InitName = "boxsh-init"
	}
	if cfg.WriteCall == nil {
		cfg.WriteCall = (*Writer).WriteCall
	}
	c := &Client{w: NewWriter(conn), cfg: cfg, pending: make(map[uint64]*call), done: make(chan struct{})}
	if err := c.w.Write(EncodeFrontHello(cfg.Hello, cfg.Setup)); err != nil {
		// The reader finds the channel ended.
		cfg.Log.Debug("send hello", "error", err)
	}
	go c.readLoop(conn, NewReader(conn))
	return c
}

// Done is closed when the channel has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the channel ended, once Done is closed: an error wrapping
// ErrClosed, or a *MismatchError.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// take removes call id from the pending calls. Only the one who takes a
// call finishes it.
func (c *Client) take(id uint64) (call, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[id]
	if !ok {
		return call{}, false
	}
	delete(c.pending, id)
	return *p, true
}

func (c *Client) readLoop(conn io.ReadWriter, r *Reader) {
	err := c.readHello(r)
	for err == nil {
		var payload []byte
		if payload, err = r.Read(); err != nil {
			break
		}
		if id, n, ok := DecodeProgress(payload); ok {
			c.progress(id, n)
			continue
		}
		var rep Reply
		if rep, err = DecodeReply(payload); err != nil {
			if rep.ID == 0 {
				// Whose reply it was is unknown: every call may be lost.
				c.cfg.Log.Error("boxsh-init sent a malformed frame; closing the channel", "error", err)
				break
			}
			c.cfg.Log.Error("boxsh-init sent a malformed reply", "id", rep.ID, "error", err)
			if p, ok := c.take(rep.ID); ok {
				p.finish(nil, &Error{Code: CodeInternalError, Message: "boxsh-init sent a malformed reply"})
			}
			err = nil
			continue
		}
		if rep.State != "" {
			c.mark(rep.ID, rep.State)
			continue
		}
		p, ok := c.take(rep.ID)
		if !ok {
			continue // cancelled meanwhile
		}
		if rep.Error != nil {
			p.finish(nil, rep.Error)
		} else {
			p.finish(rep.Result, nil)
		}
	}
	var mismatch *MismatchError
	switch {
	case errors.As(err, &mismatch):
		if cl, ok := conn.(io.Closer); ok {
			_ = cl.Close()
		}
	case errors.Is(err, io.EOF):
		err = ErrClosed
	default:
		err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	c.mu.Lock()
	c.err = err
	var left []call
	for id, p := range c.pending {
		left = append(left, *p)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	// In the order they were sent, for calls sent again.
	slices.SortFunc(left, func(a, b call) int { return cmp.Compare(a.id, b.id) })
	// Done first: a client answered about a lost call may send the next at
	// once, and it must find the channel ended (to start a new one).
	close(c.done)
	for _, p := range left {
		if p.queued {
			p.finish(nil, fmt.Errorf("%w: %w", ErrNotStarted, err))
		} else {
			p.finish(nil, err)
		}
	}
}

// readHello reads boxsh-init's hello and checks it against the front's.
func (c *Client) readHello(r *Reader) error {
	payload, err := r.Read()
	if err != nil {
		return err
	}
	_, err = CheckHello(payload, c.cfg.Hello, c.cfg.InitName, "this boxsh")
	return err
}

// mark records a notice of call id's state.
func (c *Client) mark(id uint64, state string) {
	c.cfg.Log.Trace("call state", "id", id, "state", state)
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pending[id]; ok {
		p.queued = state == StateQueued
	}
}

// progress hands a progress frame of call id to its OnProgress.
func (c *Client) progress(id, n uint64) {
	c.mu.Lock()
	var fn OnProgress
	if p, ok := c.pending[id]; ok {
		fn = p.progress
	}
	c.mu.Unlock()
	if fn != nil {
		fn(n)
	}
}

// OtherSlots is how many calls other than commands boxsh-init runs at once
// (its toolhost.Config.MaxOtherCalls); more wait for a slot, a quick read
// among them. A front that answers reads itself does so only while fewer
// calls than that are pending (Client.Pending), so that a read boxsh-init
// would have queued is queued still.
const OtherSlots = 16

// Pending is how many calls were sent and are not yet finished.
func (c *Client) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// Start sends a call to boxsh-init without waiting for the reply. Calls reach
// boxsh-init in the order Start is called.
//
// done is called once:
//
//   - with the reply, on the Client's reading goroutine (see Client);
//   - with ErrClosed, if the channel ends first. It is ErrNotStarted too when
//     boxsh-init had queued the call and not started it.
//   - with ctx.Err(), if ctx is cancelled first, after boxsh-init has been
//     asked to stop the call. Its reply, if one comes, is dropped.
//
// When Start returns an error, done is not called. The error is ErrNotSent
// when boxsh-init cannot have run the call. A ctx made by WithProgress asks
// for progress frames.
func (c *Client) Start(ctx context.Context, name string, args json.RawMessage, done Done) error {
	every, onProgress := progressOf(ctx)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	c.nextID++
	id := c.nextID
	p := &call{id: id, done: done, progress: onProgress}
	c.pending[id] = p
	c.mu.Unlock()

	if err := c.cfg.WriteCall(c.w, Call{ID: id, Tool: name, Args: args, Progress: every}); err != nil {
		if _, ok := c.take(id); !ok {
			// The channel ended meanwhile and the reader has finished the
			// call (ErrClosed): it must not fail a second time.
			return nil
		}
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	// Set up cancellation after the call is sent, so that a cancel frame
	// never overtakes it.
	stop := context.AfterFunc(ctx, func() {
		if p, ok := c.take(id); ok {
			_ = c.w.WriteJSON(Call{ID: id, Cancel: true})
			p.done(nil, ctx.Err())
		}
	})
	c.mu.Lock()
	if _, ok := c.pending[id]; ok {
		p.stop, stop = stop, nil
	}
	c.mu.Unlock()
	if stop != nil {
		stop() // the call finished meanwhile
	}
	return nil
}
