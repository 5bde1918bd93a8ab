// Package apitype declares the wire types of a server of many sandboxes (boxsh
// --rpc --listen --sandboxes).
//
// They are the bodies of the requests and answers of its management API,
// /v1/sandboxes and /v1/snapshots. The server and the Go client (package
// client) share them. The package holds types only and imports nothing of
// boxsh.
//
// Some answers use types of other packages:
//
//   - GET /v1/sandboxes/NAME/changes answers {"changes": [...]}, a list of
//     client/session's Change;
//   - POST /v1/sandboxes/NAME/apply answers a client/session ApplyResult;
//   - GET /v1/sandboxes/NAME/stats answers the output of the sandbox_stats
//     tool (client.Stats).
package apitype

import "time"

// Where a new sandbox's workspace comes from (SandboxRequest.From), and
// where a sandbox's came from (SandboxInfo.From).
const (
	// FromWorkspace is a copy-on-write view of the server's working
	// directory (a session, as boxsh --try makes).
	FromWorkspace = "workspace"
	// FromEmpty is an empty directory of the sandbox's own.
	FromEmpty = "empty"
	// FromSnapshotPrefix, followed by a snapshot's name, starts the
	// sandbox from that snapshot.
	FromSnapshotPrefix = "snapshot:"
	// FromForkPrefix, followed by the name of the sandbox it was forked
	// from, is the From of a fork.
	FromForkPrefix = "fork:"
)

// The headers by which a router in front of many servers places requests
// and tells where they went.
const (
	// SandboxHeader names the sandbox of a request whose path does not:
	// a create by POST, a snapshot. A server refuses one naming another
	// sandbox than the body.
	SandboxHeader = "X-Sandbox"
	// ServerHeader names the server that answered (boxsh --server-id).
	ServerHeader = "Boxsh-Server"
)

// SandboxRequest is the body of POST /v1/sandboxes and of POST
// /v1/sandboxes/NAME/fork.
//
// For a fork, Name names the new sandbox, and From and Disk are not used.
type SandboxRequest struct {
	// Name names the sandbox: 1 to 63 letters, digits, '-' and '_',
	// starting with a letter or digit.
	Name string `json:"name"`
	// From is FromWorkspace (default), FromEmpty or FromSnapshotPrefix
	// followed by a snapshot's name.
	From string `json:"from,omitempty"`
	// Disk bounds the sandbox's writable layer ("512M", "2G"; default
	// and maximum: the server's --sandbox-disk).
	Disk string `json:"disk,omitempty"`
}

// SandboxInfo describes a sandbox: the answer of a create, a fork and a
// restore, and an entry of SandboxList.
type SandboxInfo struct {
	Name string `json:"name"`
	From string `json:"from"`
	// Created is when the sandbox started. AgeSeconds is the seconds since
	// then. IdleSeconds is the seconds since its last call ended, or began
	// when one is running.
	Created     time.Time `json:"created"`
	AgeSeconds  float64   `json:"age_seconds"`
	IdleSeconds float64   `json:"idle_seconds"`
	// Calls counts its tool calls; Running are those in flight.
	Calls   int64 `json:"calls"`
	Running int   `json:"running"`
	// Workspace is the host directory of its files: the session's
	// changes (from workspace) or its own directory (empty).
	Workspace string `json:"workspace,omitempty"`
	// Disk is the space its writable layer takes, against its limit
	// (nil without a disk limit).
	Disk *SandboxDisk `json:"disk,omitempty"`
	// Endpoint is the path of its MCP endpoint (/s/NAME/mcp). Token is its
	// bearer token, given by a create and a fork only; it is empty when
	// the server has no token.
	Endpoint string `json:"endpoint"`
	Token    string `json:"token,omitempty"`
	// Server names the server that hosts it (boxsh --server-id: a pod's
	// name, behind a router), when it has a name.
	Server string `json:"server,omitempty"`
}

// SandboxDisk is a sandbox's disk use, with a disk limit.
type SandboxDisk struct {
	// Used is the space its writable layer took at the server's last look,
	// and Limit its bound. Full is set past the bound, where files can no
	// longer grow.
	Used  int64 `json:"used_bytes"`
	Limit int64 `json:"limit_bytes"`
	Full  bool  `json:"full"`
}

// SandboxList is the answer of GET /v1/sandboxes.
type SandboxList struct {
	// Sandboxes are the sandboxes, by name, without their tokens.
	Sandboxes []SandboxInfo `json:"sandboxes"`
	// Warm is the number of sandboxes started ahead, ready to be taken
	// by a create (--warm-sandboxes).
	Warm int `json:"warm"`
}

// TokenResponse is the answer of POST /v1/sandboxes/NAME/token: the
// sandbox's new token, which replaces its old one.
type TokenResponse struct {
	Endpoint string `json:"endpoint"`
	Name     string `json:"name"`
	Token    string `json:"token"`
}

// ApplyRequest is the body of POST /v1/sandboxes/NAME/apply (an empty
// body is the zero ApplyRequest).
type ApplyRequest struct {
	// DryRun only tells what would be applied. Paths limits the apply to
	// these paths, relative to the workspace; none means every change.
	DryRun bool     `json:"dry_run"`
	Paths  []string `json:"paths"`
}

// SnapshotRequest is the body of POST /v1/snapshots.
type SnapshotRequest struct {
	// Name names the snapshot, as a sandbox is named; Sandbox is the
	// sandbox to snapshot.
	Name    string `json:"name"`
	Sandbox string `json:"sandbox"`
}

// SnapshotInfo describes a snapshot: the answer of POST /v1/snapshots,
// and an entry of SnapshotList.
type SnapshotInfo struct {
	Name string `json:"name"`
	// Sandbox is the sandbox the snapshot was taken of. Base is where that
	// sandbox's files came from (FromWorkspace or FromEmpty); a sandbox
	// restored to the snapshot must have the same.
	Sandbox string    `json:"sandbox"`
	Base    string    `json:"base"`
	Created time.Time `json:"created"`
	// Bytes is the size of its files; PausedMS how long the sandbox was
	// paused while it was taken, in milliseconds.
	Bytes    int64   `json:"size_bytes"`
	PausedMS float64 `json:"paused_ms"`
}

// SnapshotList is the answer of GET /v1/snapshots.
type SnapshotList struct {
	// Snapshots are the snapshots, by name.
	Snapshots []SnapshotInfo `json:"snapshots"`
}

// RestoreRequest is the body of POST /v1/sandboxes/NAME/restore.
type RestoreRequest struct {
	// Snapshot is the snapshot the sandbox is reset to.
	Snapshot string `json:"snapshot"`
}

// Problem is the body of every refusal of the server's HTTP API, its REST
// twin's included.
//
// It is sent as application/problem+json (RFC 9457). Status tells why: 429 for
// a limit reached, 409 for a name taken, 404 for no such sandbox, 401 for a
// wrong token, and so on.
type Problem struct {
	// Detail is the server's explanation; Status the HTTP status, Title
	// its text.
	Detail string `json:"detail"`
	Status int    `json:"status"`
	Title  string `json:"title"`
}
