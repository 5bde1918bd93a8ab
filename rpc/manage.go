package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/tool"
)

// The management API as MCP tools, at /v1/manage/mcp of a server of many
// sandboxes: the same calls as the REST paths of /v1/sandboxes and
// /v1/snapshots, behind the server's token only (a sandbox's token does
// not reach it). Each tool answers its REST twin's JSON as
// structuredContent and as text; a refusal (a limit, a taken name, no
// such sandbox) is a failed result (isError) with the REST detail.

// ManagePath is the path of the management MCP endpoint.
const ManagePath = "/v1/manage/mcp"

// The management tools.
const (
	ToolCreateSandbox   = "create_sandbox"
	ToolListSandboxes   = "list_sandboxes"
	ToolDeleteSandbox   = "delete_sandbox"
	ToolSnapshotSandbox = "snapshot_sandbox"
	ToolListSnapshots   = "list_snapshots"
	ToolDeleteSnapshot  = "delete_snapshot"
	ToolForkSandbox     = "fork_sandbox"
	ToolRestoreSandbox  = "restore_sandbox"
	ToolSandboxChanges  = "sandbox_changes"
	ToolSandboxDiff     = "sandbox_diff"
	ToolApplySandbox    = "apply_sandbox"
	ToolSandboxStats    = "sandbox_stats"
)

// nameProp is the schema of a sandbox's or snapshot's name.
const nameProp = `{"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$", "description": "%s: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"}`

// manageSpecs are the management tools.
func manageSpecs() []tool.Spec {
	name := func(what string) string { return strings.Replace(nameProp, "%s", what, 1) }
	obj := func(required []string, props ...string) json.RawMessage {
		req, _ := json.Marshal(required)
		return json.RawMessage(`{"type": "object", "properties": {` + strings.Join(props, ", ") + `}, "required": ` + string(req) + `}`)
	}
	ro := func(title string) tool.Annotations { return tool.Annotations{Title: title, ReadOnlyHint: true} }
	rw := func(title string, destructive bool) tool.Annotations {
		return tool.Annotations{Title: title, DestructiveHint: destructive}
	}
	sandbox := `"sandbox": ` + name("The sandbox")
	return []tool.Spec{
		{Name: ToolCreateSandbox, Description: "Create a sandbox: its own boxsh-init, workers, network namespace, and a copy-on-write view of the server's workspace (from \"workspace\", the default), an empty directory (\"empty\") or a snapshot's files (\"snapshot:NAME\"). Answers its MCP endpoint and its bearer token (given only here).",
			InputSchema: obj([]string{"name"}, `"name": `+name("The new sandbox's name"),
				`"from": {"type": "string", "description": "\"workspace\" (default), \"empty\" or \"snapshot:NAME\""}`),
			Annotations: rw("Create Sandbox", false)},
		{Name: ToolListSandboxes, Description: "List the sandboxes: name, origin, age, idle time, calls.",
			InputSchema: obj([]string{}), Annotations: ro("List Sandboxes")},
		{Name: ToolDeleteSandbox, Description: "Delete a sandbox: its processes stop and its files go.",
			InputSchema: obj([]string{"name"}, `"name": `+name("The sandbox")), Annotations: rw("Delete Sandbox", true)},
		{Name: ToolSnapshotSandbox, Description: "Freeze a sandbox's files as a named read-only snapshot. Its processes are paused (not stopped) while the files are copied, so that the snapshot is consistent; writes wait, none is lost.",
			InputSchema: obj([]string{"sandbox", "name"}, sandbox, `"name": `+name("The snapshot's name")), Annotations: rw("Snapshot Sandbox", false)},
		{Name: ToolListSnapshots, Description: "List the snapshots: name, the sandbox taken, size, how long the sandbox was paused.",
			InputSchema: obj([]string{}), Annotations: ro("List Snapshots")},
		{Name: ToolDeleteSnapshot, Description: "Delete a snapshot. Sandboxes started from it keep their files.",
			InputSchema: obj([]string{"name"}, `"name": `+name("The snapshot")), Annotations: rw("Delete Snapshot", true)},
		{Name: ToolForkSandbox, Description: "Create a sandbox with another sandbox's files as they are now (a snapshot, then a create from it). Answers the new sandbox's endpoint and token.",
			InputSchema: obj([]string{"sandbox", "name"}, sandbox, `"name": `+name("The new sandbox's name")), Annotations: rw("Fork Sandbox", false)},
		{Name: ToolRestoreSandbox, Description: "Reset a sandbox to a snapshot: its processes are restarted, its files become the snapshot's. The snapshot must be of a sandbox with the same origin (workspace or empty).",
			InputSchema: obj([]string{"sandbox", "snapshot"}, sandbox, `"snapshot": `+name("The snapshot")), Annotations: rw("Restore Sandbox", true)},
		{Name: ToolSandboxChanges, Description: "List a sandbox's changes to the workspace (as boxsh changes --json).",
			InputSchema: obj([]string{"sandbox"}, sandbox), Annotations: ro("Sandbox Changes")},
		{Name: ToolSandboxDiff, Description: "The unified diff of a sandbox's changes to the workspace (as boxsh diff), or of one path's.",
			InputSchema: obj([]string{"sandbox"}, sandbox, `"path": {"type": "string", "description": "Only this path's changes (relative to the workspace)"}`),
			Annotations: ro("Sandbox Diff")},
		{Name: ToolApplySandbox, Description: "Apply a sandbox's changes to the workspace on the host (as boxsh apply): conflicts (paths the host changed since the sandbox started) and protected paths are refused.",
			InputSchema: obj([]string{"sandbox"}, sandbox,
				`"dry_run": {"type": "boolean", "description": "Tell what would be applied; change nothing"}`,
				`"paths": {"type": "array", "items": {"type": "string"}, "description": "Only these paths (relative to the workspace); none: all"}`),
			Annotations: rw("Apply Sandbox Changes", true)},
		{Name: ToolSandboxStats, Description: "A sandbox's figures (as its own sandbox_stats tool answers them): CPU time, memory and processes, disk used by its writable layer, bytes through its proxy, uptime.",
			InputSchema: obj([]string{"sandbox"}, sandbox), Annotations: ro("Sandbox Stats")},
	}
}

// manageMCP is the handler of ManagePath: an MCP server of the
// management tools, behind the server's token.
func (rt *SandboxRouter) manageMCP() (http.Handler, error) {
	tools, err := tool.NewRegistryOf(manageSpecs()...)
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

// manageArgs are the members of the management tools' arguments.
type manageArgs struct {
	Name     string   `json:"name"`
	From     string   `json:"from"`
	Sandbox  string   `json:"sandbox"`
	Snapshot string   `json:"snapshot"`
	Path     string   `json:"path"`
	DryRun   bool     `json:"dry_run"`
	Paths    []string `json:"paths"`
}

func (b manageBackend) Start(ctx context.Context, name string, raw json.RawMessage, done func(json.RawMessage, error)) error {
	var a manageArgs
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a); err != nil {
			return &Error{Code: CodeInvalidParams, Message: name + " tool: " + err.Error()}
		}
	}
	go func() {
		began := time.Now()
		v, err := b.call(ctx, name, a)
		if name != ToolListSandboxes && name != ToolListSnapshots && name != ToolSandboxChanges && name != ToolSandboxDiff {
			target := a.Sandbox
			if target == "" || name == ToolForkSandbox {
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

// call runs management tool name.
func (b manageBackend) call(ctx context.Context, name string, a manageArgs) (any, error) {
	rt := b.rt
	switch name {
	case ToolCreateSandbox:
		return rt.createManaged(ctx, SandboxRequest{SandboxRequest: apitype.SandboxRequest{Name: a.Name, From: a.From}})
	case ToolListSandboxes:
		return rt.list(), nil
	case ToolDeleteSandbox:
		if err := rt.host.Delete(a.Name); err != nil {
			return nil, err
		}
		rt.forget(a.Name)
		return map[string]any{"deleted": a.Name}, nil
	case ToolSandboxStats:
		return rt.host.Stats(a.Sandbox)
	case ToolSnapshotSandbox:
		return rt.host.Snapshot(a.Sandbox, a.Name)
	case ToolListSnapshots:
		list, err := rt.host.Snapshots()
		return apitype.SnapshotList{Snapshots: list}, err
	case ToolDeleteSnapshot:
		if err := rt.host.DeleteSnapshot(a.Name); err != nil {
			return nil, err
		}
		return map[string]any{"deleted": a.Name}, nil
	case ToolForkSandbox:
		return rt.fork(ctx, a.Sandbox, a.Name)
	case ToolRestoreSandbox:
		info, err := rt.host.Restore(a.Sandbox, a.Snapshot)
		info.Endpoint = "/s/" + info.Name + "/mcp"
		return info, err
	case ToolSandboxChanges:
		changes, err := rt.host.Changes(a.Sandbox)
		return map[string]any{"changes": changes}, err
	case ToolSandboxDiff:
		diff, err := rt.host.Diff(a.Sandbox, a.Path)
		return map[string]any{"diff": diff}, err
	case ToolApplySandbox:
		return rt.host.Apply(a.Sandbox, apitype.ApplyRequest{DryRun: a.DryRun, Paths: a.Paths})
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: "unknown tool " + name}
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
