package rpc

import (
	"context"
	"encoding/json"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/tool"
)

// SandboxRequest is a create a SandboxHost is asked for: the body of POST
// /v1/sandboxes, and what the router adds.
type SandboxRequest struct {
	apitype.SandboxRequest
	// Ephemeral sandboxes (an MCP session's) lose their files when the
	// server stops; others keep them, as sessions.
	Ephemeral bool
}

// SandboxHost starts and stops the sandboxes of a SandboxRouter, reviews
// and applies their changes, measures them and snapshots them.
type SandboxHost interface {
	// Create starts sandbox req.Name, returning its backend once it
	// answers. A refusal is a *SandboxError.
	Create(ctx context.Context, req SandboxRequest) (Backend, apitype.SandboxInfo, error)
	// Lookup returns a sandbox's backend.
	Lookup(name string) (Backend, bool)
	// Delete stops a sandbox and removes everything it had.
	Delete(name string) error
	// List describes the sandboxes, by name; Warm is the number of those
	// started ahead, ready to be taken by a create.
	List() []apitype.SandboxInfo
	Warm() int
	SandboxFiles
	SandboxStats
	SandboxSnapshots
}

// SandboxFiles reviews and applies a sandbox's changes to the workspace
// (its copy-on-write session): GET /v1/sandboxes/NAME/changes and
// /diff?path=P, POST .../apply. The router passes their answers on as
// they are: the host is the one that knows their types (those of package
// client/session).
type SandboxFiles interface {
	// Changes is the JSON of the changes (an array); Diff is the unified
	// diff of path's changes, or of all when path is "".
	Changes(name string) (json.RawMessage, error)
	Diff(name, path string) (string, error)
	// Apply writes the changes (of req.Paths, or all) into the
	// workspace, refusing conflicts and protected paths, or only tells
	// what it would do with req.DryRun; its answer is the JSON of what
	// it did.
	Apply(name string, req apitype.ApplyRequest) (json.RawMessage, error)
}

// SandboxStats measures a sandbox as its sandbox_stats tool does: GET
// /v1/sandboxes/NAME/stats.
type SandboxStats interface {
	// Stats is what sandbox name uses; a missing sandbox is a
	// *SandboxError.
	Stats(name string) (tool.StatsOutput, error)
}

// SandboxSnapshots freezes sandboxes' files as named snapshots, starts
// sandboxes from them and resets sandboxes to them:
//
//	POST   /v1/snapshots                {"name", "sandbox"}: 201
//	GET    /v1/snapshots                list
//	DELETE /v1/snapshots/NAME
//	POST   /v1/sandboxes                {"name", "from": "snapshot:SNAP"}
//	POST   /v1/sandboxes/NAME/fork      {"name"}: 201 with its token
//	POST   /v1/sandboxes/NAME/restore   {"snapshot"}
type SandboxSnapshots interface {
	// Snapshot freezes sandbox name's files as snapshot snap; its
	// processes are paused meanwhile.
	Snapshot(name, snap string) (apitype.SnapshotInfo, error)
	// Snapshots lists the snapshots, DeleteSnapshot deletes one.
	Snapshots() ([]apitype.SnapshotInfo, error)
	DeleteSnapshot(snap string) error
	// Fork starts sandbox req.Name with sandbox name's files as they are
	// now (Create from an unnamed snapshot).
	Fork(ctx context.Context, name string, req SandboxRequest) (Backend, apitype.SandboxInfo, error)
	// Restore resets sandbox name to snapshot snap: its processes are
	// restarted, its files are the snapshot's.
	Restore(name, snap string) (apitype.SandboxInfo, error)
}

// SandboxError is a refused create or delete, with its HTTP status.
type SandboxError struct {
	Status int // 400 a bad request, 404 no such sandbox, 409 the name is taken, 429 a limit
	Msg    string
}

func (e *SandboxError) Error() string { return e.Msg }

// SandboxCall is a management call of a SandboxRouter, once answered:
// for the audit log (SandboxRouter.Managed).
type SandboxCall struct {
	// Action is "create", "delete", "apply", "fork", "restore",
	// "snapshot" or "delete_snapshot" (or a management tool's name); Name
	// the sandbox (the snapshot for delete_snapshot).
	Action, Name string
	// Client is who asked: "rest ADDRESS", a client of the management
	// MCP endpoint, or an MCP session's client (see ClientOf) for the
	// sandbox of its own made and deleted.
	Client string
	// Args are the request's arguments (from; dry_run and paths).
	Args  map[string]any
	Began time.Time
	Err   error
}
