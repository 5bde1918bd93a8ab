package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/tool"
)

// Starter runs tool calls (rpc.Backend's method).
type Starter interface {
	Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error
}

// Backend records every call it passes on to Next in Log, and answers the
// audit tool from Log. A nil Log records nothing; audit then fails.
type Backend struct {
	Next Starter
	Log  *Log
	// Client names the client of a call from its context (rpc.ClientOf).
	Client func(context.Context) string
	// Sandbox names the sandbox the calls run in, when a server runs
	// several, all of them writing Log. The audit tool then answers only
	// that sandbox's entries from Since on, so that no sandbox's client
	// reads another's. Since is the sandbox's start: a sandbox made again
	// under a name sees none of its predecessor's entries.
	Sandbox string
	Since   time.Time
	// Errors receives the failures to write the log (the calls go on).
	Errors hclog.Logger
}

// tools are the handlers of the tools the Backend answers itself.
var tools = tool.NewMux[*Backend, json.RawMessage](tool.SandboxSet, tool.Front, func(name string, args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return &initproto.Error{Code: initproto.CodeInvalidParams, Message: name + " tool: invalid arguments: " + err.Error()}
	}
	return nil
})

func init() {
	tool.Handle(tools, tool.AuditDef, func(_ context.Context, b *Backend, a tool.AuditArgs) (json.RawMessage, error) {
		return b.answer(a)
	})
}

// Tools returns the names of the tools a Backend answers itself.
func Tools() []string { return tools.Names() }

// Start runs the call through Next and records it once answered.
func (b *Backend) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	if h, ok := tools.Lookup(name); ok {
		res, err := h(ctx, b, args)
		if b.Log == nil {
			go done(res, err)
			return nil
		}
		return b.record(ctx, name, args, func(_ context.Context, _ string, _ json.RawMessage, d func(json.RawMessage, error)) error {
			go d(res, err)
			return nil
		}, done)
	}
	if b.Log == nil {
		return b.Next.Start(ctx, name, args, done)
	}
	return b.record(ctx, name, args, b.Next.Start, done)
}

// record runs the call with start and records it as its answer goes out.
func (b *Backend) record(ctx context.Context, name string, args json.RawMessage, start func(context.Context, string, json.RawMessage, func(json.RawMessage, error)) error, done func(json.RawMessage, error)) error {
	began := time.Now()
	e := Entry{Time: Time(began), Kind: tool.AuditCall, Tool: name, Sandbox: b.Sandbox, Args: Summarize(args)}
	if b.Client != nil {
		e.Client = b.Client(ctx)
	}
	err := start(ctx, name, args, func(res json.RawMessage, err error) {
		e.DurationMS = time.Since(began).Milliseconds()
		e.Cancelled = ctx.Err() != nil
		switch {
		case err != nil:
			e.Error = err.Error()
		default:
			Outcome(&e, name, res)
		}
		b.write(e)
		done(res, err)
	})
	if err != nil {
		e.DurationMS = time.Since(began).Milliseconds()
		e.Error = err.Error()
		b.write(e)
	}
	return err
}

func (b *Backend) write(e Entry) {
	if err := b.Log.Record(e); err != nil && b.Errors != nil {
		b.Errors.Error("audit log", "error", err)
	}
}

// answer is the result of an audit call.
func (b *Backend) answer(a tool.AuditArgs) (json.RawMessage, error) {
	var r tool.Result
	switch n := a.Last; {
	case b.Log == nil:
		r = tool.Errorf("audit: this boxsh keeps no audit log (start it with --audit FILE)")
	case n > tool.AuditMaxLast:
		r = tool.Errorf("audit: last %d: at most %d", n, tool.AuditMaxLast)
	default:
		if n == 0 {
			n = tool.AuditDefaultLast
		}
		entries, skipped, err := b.Log.TailOf(n, b.keep())
		if err != nil {
			r = tool.Errorf("audit: %v", err)
			break
		}
		r = tool.StructuredResult(tool.AuditOutput{Path: b.Log.Path(), Entries: entries, Skipped: skipped})
	}
	return json.Marshal(r)
}

// keep selects the entries the audit tool answers: every one, or those
// of Sandbox since Since.
func (b *Backend) keep() func(Entry) bool {
	if b.Sandbox == "" {
		return nil
	}
	return func(e Entry) bool {
		if e.Sandbox != b.Sandbox {
			return false
		}
		t, err := time.Parse(time.RFC3339Nano, e.Time)
		return err == nil && !t.Before(b.Since)
	}
}
