package rpc

import (
	"context"
	"encoding/json"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/tool"
)

// SandboxRequest asks a SandboxHost to create a sandbox. It is the body of
// POST /v1/sandboxes plus what the router adds.
type SandboxRequest struct {
	apitype.SandboxRequest
	// Ephemeral sandboxes (an MCP session's) lose their files when the
	// server stops; others keep them, as sessions.
	Ephemeral bool
}

// SandboxHost runs the sandboxes of a SandboxRouter. It starts and stops
// them, reviews and applies their changes, measures them and snapshots
// them.
type SandboxHost interface {
	// Create starts sandbox req.Name, returning its backend once it
	// answers. A refusal is a *SandboxError.
	Create(ctx context.Context, req SandboxRequest) (Backend, apitype.SandboxInfo, error)
	// Lookup returns a sandbox's backend.
	Lookup(name string) (Backend, bool)
	// Delete stops a sandbox and removes everything it had.
	Delete(name string) error
	// List describes the sandboxes, by name. Warm is the number of
	// sandboxes started ahead, ready to be taken by a create.
	List() []apitype.SandboxInfo
	Warm() int
	SandboxFiles
	SandboxStats
	SandboxSnapshots
}

// SandboxFiles reviews a sandbox's changes and applies them to the
// workspace the sandbox is a copy-on-write session of.
//
// It serves GET /v1/sandboxes/NAME/changes and /diff?path=P, and POST
// .../apply. The router passes the answers on as they are, since only the
// host knows their types (those of package client/session).
type SandboxFiles interface {
	// Changes returns the JSON of the changes, an array. Diff returns the
	// unified diff of path's changes, or of all when path is "".
	Changes(name string) (json.RawMessage, error)
	Diff(name, path string) (string, error)
	// Apply writes the changes of req.Paths, or all, into the workspace.
	// It refuses conflicts and protected paths. With req.DryRun it only
	// tells what it would do. Its answer is the JSON of what it did.
	Apply(name string, req apitype.ApplyRequest) (json.RawMessage, error)
}

// SandboxStats measures a sandbox as its sandbox_stats tool does. It
// serves GET /v1/sandboxes/NAME/stats.
type SandboxStats interface {
	// Stats returns what sandbox name uses. A missing sandbox is a
	// *SandboxError.
	Stats(name string) (tool.StatsOutput, error)
}

// SandboxSnapshots freezes sandboxes' files as named snapshots. It also
// starts sandboxes from snapshots and resets sandboxes to them. It serves:
//
//	POST   /v1/snapshots                {"name", "sandbox"}: 201
//	GET    /v1/snapshots                list
//	DELETE /v1/snapshots/NAME
//	POST   /v1/sandboxes                {"name", "from": "snapshot:SNAP"}
//	POST   /v1/sandboxes/NAME/fork      {"name"}: 201 with its token
//	POST   /v1/sandboxes/NAME/restore   {"snapshot"}
type SandboxSnapshots interface {
	// Snapshot freezes sandbox name's files as snapshot snap. The
	// sandbox's processes are paused meanwhile.
	Snapshot(name, snap string) (apitype.SnapshotInfo, error)
	// Snapshots lists the snapshots. DeleteSnapshot deletes one.
	Snapshots() ([]apitype.SnapshotInfo, error)
	DeleteSnapshot(snap string) error
	// Fork starts sandbox req.Name with sandbox name's files as they are
	// now, as Create from an unnamed snapshot would.
	Fork(ctx context.Context, name string, req SandboxRequest) (Backend, apitype.SandboxInfo, error)
	// Restore resets sandbox name to snapshot snap. Its processes are
	// restarted, and its files are the snapshot's.
	Restore(name, snap string) (apitype.SandboxInfo, error)
}

// SandboxError is a refused create or delete, with its HTTP status.
type SandboxError struct {
	// Status is 400 for a bad request, 404 for no such sandbox, 409 when
	// the name is taken, 429 for a limit.
	Status int
	Msg    string
}

func (e *SandboxError) Error() string { return e.Msg }

// SandboxCall is an answered management call of a SandboxRouter, as
// SandboxRouter.Managed is told it for the audit log.
type SandboxCall struct {
	// Action is "create", "delete", "apply", "fork", "restore",
	// "snapshot" or "delete_snapshot", or a management tool's name.
	// Name is the sandbox, or the snapshot for delete_snapshot.
	Action, Name string
	// Client is who asked. It is "rest ADDRESS", a client of the
	// management MCP endpoint, or the client of an MCP session (see
	// ClientOf) whose own sandbox was made or deleted.
	Client string
	// Args are the request's arguments: from, dry_run and paths.
	Args  map[string]any
	Began time.Time
	Err   error
}
