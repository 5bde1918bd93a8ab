package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/tool"
)

// The management API as MCP tools, at /v1/manage/mcp of a server of many
// sandboxes. The tools make the same calls as the REST paths of
// /v1/sandboxes and /v1/snapshots. They are behind the server's token
// only: a sandbox's token does not reach them. Each tool answers its REST
// twin's JSON as structuredContent and as text. A refusal (a limit, a
// taken name, no such sandbox) is a failed result (isError) with the REST
// detail.

// ManagePath is the path of the management MCP endpoint, where the
// management API is served as MCP tools.
const ManagePath = "/v1/manage/mcp"

// manageMCP is the handler of ManagePath: an MCP server of the
// management tools, behind the server's token.
func (rt *SandboxRouter) manageMCP() (http.Handler, error) {
	tools, err := tool.NewRegistryOf(tool.ManageSet)
	if err != nil {
		return nil, err
	}
	srv := &Server{Tools: tools, Backend: manageBackend{rt}, Name: "boxsh-manage", Version: rt.srv.Version, Log: rt.srv.Log}
	h, err := srv.NewHTTPHandler(rt.base, rt.opts)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/mcp"
		r2.URL.RawPath = ""
		h.ServeHTTP(w, r2)
	}), nil
}

// manageBackend runs the management tools.
type manageBackend struct{ rt *SandboxRouter }

// manageTools are the handlers of the management tools, each answering
// the JSON its REST twin answers.
var manageTools = tool.NewMux[*SandboxRouter, any](tool.ManageSet, tool.Front, func(name string, raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &Error{Code: CodeInvalidParams, Message: name + " tool: " + err.Error()}
	}
	return nil
})

func init() {
	tool.Handle(manageTools, tool.CreateSandboxDef, func(ctx context.Context, rt *SandboxRouter, a tool.CreateSandboxArgs) (any, error) {
		return rt.createManaged(ctx, SandboxRequest{SandboxRequest: apitype.SandboxRequest{Name: a.Name, From: a.From}})
	})
	tool.Handle(manageTools, tool.ListSandboxesDef, func(_ context.Context, rt *SandboxRouter, _ tool.ManageNoArgs) (any, error) {
		return rt.list(), nil
	})
	tool.Handle(manageTools, tool.DeleteSandboxDef, func(_ context.Context, rt *SandboxRouter, a tool.DeleteSandboxArgs) (any, error) {
		if err := rt.host.Delete(a.Name); err != nil {
			return nil, err
		}
		rt.forget(a.Name)
		return map[string]any{"deleted": a.Name}, nil
	})
	tool.Handle(manageTools, tool.SnapshotSandboxDef, func(_ context.Context, rt *SandboxRouter, a tool.SnapshotSandboxArgs) (any, error) {
		return rt.host.Snapshot(a.Sandbox, a.Name)
	})
	tool.Handle(manageTools, tool.ListSnapshotsDef, func(_ context.Context, rt *SandboxRouter, _ tool.ManageNoArgs) (any, error) {
		list, err := rt.host.Snapshots()
		return apitype.SnapshotList{Snapshots: list}, err
	})
	tool.Handle(manageTools, tool.DeleteSnapshotDef, func(_ context.Context, rt *SandboxRouter, a tool.DeleteSnapshotArgs) (any, error) {
		if err := rt.host.DeleteSnapshot(a.Name); err != nil {
			return nil, err
		}
		return map[string]any{"deleted": a.Name}, nil
	})
	tool.Handle(manageTools, tool.ForkSandboxDef, func(ctx context.Context, rt *SandboxRouter, a tool.ForkSandboxArgs) (any, error) {
		return rt.fork(ctx, a.Sandbox, a.Name)
	})
	tool.Handle(manageTools, tool.RestoreSandboxDef, func(_ context.Context, rt *SandboxRouter, a tool.RestoreSandboxArgs) (any, error) {
		info, err := rt.host.Restore(a.Sandbox, a.Snapshot)
		info.Endpoint = "/s/" + info.Name + "/mcp"
		return info, err
	})
	tool.Handle(manageTools, tool.SandboxChangesDef, func(_ context.Context, rt *SandboxRouter, a tool.SandboxArgs) (any, error) {
		changes, err := rt.host.Changes(a.Sandbox)
		return map[string]any{"changes": changes}, err
	})
	tool.Handle(manageTools, tool.SandboxDiffDef, func(_ context.Context, rt *SandboxRouter, a tool.SandboxDiffArgs) (any, error) {
		diff, err := rt.host.Diff(a.Sandbox, a.Path)
		return map[string]any{"diff": diff}, err
	})
	tool.Handle(manageTools, tool.ApplySandboxDef, func(_ context.Context, rt *SandboxRouter, a tool.ApplySandboxArgs) (any, error) {
		return rt.host.Apply(a.Sandbox, apitype.ApplyRequest{DryRun: a.DryRun, Paths: a.Paths})
	})
	tool.Handle(manageTools, tool.ManageStatsDef, func(_ context.Context, rt *SandboxRouter, a tool.SandboxArgs) (any, error) {
		return rt.host.Stats(a.Sandbox)
	})
	tool.Handle(manageTools, tool.SandboxNetworkDef, networkTool)
}

// manageArgs are the members of the management tools' arguments that the
// audit log keeps.
type manageArgs struct {
	Name     string   `json:"name"`
	From     string   `json:"from"`
	Sandbox  string   `json:"sandbox"`
	Snapshot string   `json:"snapshot"`
	DryRun   bool     `json:"dry_run"`
	Paths    []string `json:"paths"`
}

// Start runs a management tool; the audit log records the calls of those
// that act on a sandbox (see tool.AuditRule.Target).
func (b manageBackend) Start(ctx context.Context, name string, raw json.RawMessage, done func(json.RawMessage, error)) error {
	h, ok := manageTools.Lookup(name)
	info, _ := tool.Lookup(tool.ManageSet, name)
	if !ok || info == nil {
		return &Error{Code: CodeMethodNotFound, Message: "unknown tool " + name}
	}
	var a manageArgs
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a); err != nil {
			return &Error{Code: CodeInvalidParams, Message: name + " tool: " + err.Error()}
		}
	}
	go func() {
		began := time.Now()
		v, err := h(ctx, b.rt, raw)
		if member := info.Audit.Target; member != "" {
			target := a.Sandbox
			if member == "name" {
				target = a.Name
			}
			b.rt.managed(SandboxCall{Action: name, Name: target, Client: ClientOf(ctx), Args: a.audited(), Began: began, Err: err})
		}
		done(toolResult(v, err))
	}()
	return nil
}

// audited are the arguments the audit log keeps of a management call.
func (a manageArgs) audited() map[string]any {
	out := map[string]any{}
	for k, v := range map[string]string{"from": a.From, "snapshot": a.Snapshot, "sandbox": a.Sandbox, "name": a.Name} {
		if v != "" {
			out[k] = v
		}
	}
	if a.DryRun {
		out["dry_run"] = true
	}
	if len(a.Paths) > 0 {
		out["paths"] = a.Paths
	}
	return out
}

// list is the answer of GET /v1/sandboxes.
func (rt *SandboxRouter) list() apitype.SandboxList {
	list := rt.host.List()
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	for i := range list {
		list[i].Endpoint = "/s/" + list[i].Name + "/mcp"
		list[i].Token = ""
	}
	return apitype.SandboxList{Sandboxes: list, Warm: rt.host.Warm()}
}

// toolResult is the CallToolResult of a management tool's answer v, or
// of its failure err (isError, with the message).
func toolResult(v any, err error) (json.RawMessage, error) {
	var pe *Error
	if errors.As(err, &pe) {
		return nil, pe
	}
	if err != nil {
		err = outOfDescriptors(err)
		b, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": err.Error()}}, "isError": true})
		return b, nil
	}
	text, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(map[string]any{
		"content":           []any{map[string]string{"type": "text", "text": string(text)}},
		"structuredContent": json.RawMessage(text),
	})
	return b, err
}
