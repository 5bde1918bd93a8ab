package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
)

// SessionBackend returns the backend of /mcp on a server of many
// sandboxes. It gives each MCP session a sandbox of its own:
//   - the sandbox is made at the session's first call, from
//     apitype.FromWorkspace, and named SessionSandboxName(id);
//   - it is deleted when the session ends (see EndSession and
//     HTTPOptions.SessionEnded).
//
// Requests outside an MCP session name their sandbox in the URL instead.
func (rt *SandboxRouter) SessionBackend() Backend { return sessionBackend{rt} }

type sessionBackend struct{ rt *SandboxRouter }

// errNoSandbox refuses a call on /mcp outside an MCP session.
var errNoSandbox = &Error{Code: CodeInvalidRequest, Message: "this server hosts many sandboxes: call tools at /s/NAME/mcp (POST /v1/sandboxes makes one), or initialize a session on /mcp for a sandbox of its own"}

func (b sessionBackend) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	id := SessionID(ctx)
	if id == "" {
		go done(nil, errNoSandbox)
		return nil
	}
	backend, err := b.rt.sessionSandbox(ctx, SessionSandboxName(id))
	if err != nil {
		go done(nil, fmt.Errorf("this session's sandbox: %w", err))
		return nil
	}
	return backend.Start(ctx, name, args, done)
}

// sessionSandbox returns sandbox name, making it if needed.
func (rt *SandboxRouter) sessionSandbox(ctx context.Context, name string) (Backend, error) {
	if b, ok := rt.host.Lookup(name); ok {
		return b, nil
	}
	rt.create.Lock()
	defer rt.create.Unlock()
	if b, ok := rt.host.Lookup(name); ok {
		return b, nil
	}
	began := time.Now()
	b, _, err := rt.host.Create(ctx, SandboxRequest{SandboxRequest: apitype.SandboxRequest{Name: name, From: apitype.FromWorkspace}, Ephemeral: true})
	rt.managed(SandboxCall{Action: "create", Name: name, Client: ClientOf(ctx), Args: map[string]any{"from": apitype.FromWorkspace}, Began: began, Err: err})
	return b, err
}

// EndSession deletes the sandbox of MCP session id, if it has one. It is
// meant as HTTPOptions.SessionEnded.
func (rt *SandboxRouter) EndSession(id string) {
	name := SessionSandboxName(id)
	if _, ok := rt.host.Lookup(name); !ok {
		return
	}
	began := time.Now()
	err := rt.host.Delete(name)
	rt.managed(SandboxCall{Action: "delete", Name: name, Client: sessionClient(id), Began: began, Err: err})
	if err != nil {
		rt.srv.Log.Warn("delete a session's sandbox", "sandbox", name, "error", err)
	}
	rt.forget(name)
}

// SessionSandboxName is the name of the sandbox of MCP session id.
func SessionSandboxName(id string) string {
	if len(id) > 16 {
		id = id[:16]
	}
	return sessionSandboxPrefix + id
}

// sessionSandboxPrefix starts the names of MCP sessions' sandboxes, which
// create refuses.
const sessionSandboxPrefix = "mcp-"
