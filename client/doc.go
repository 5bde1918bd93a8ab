// Package client runs boxsh from Go: a client of boxsh's MCP server
// (boxsh --rpc) with typed calls, and copy-on-write sessions whose changes
// are reviewed, then applied to the project or thrown away.
//
// # Public API
//
// This package, client/session, client/apitype (the wire types of a
// server of many sandboxes, which SandboxInfo and SnapshotInfo embed and
// SandboxDisk and CreateRequest are), and the tool types this package
// names through aliases (ReadRequest, Edit, EditResult, ListRequest,
// ListResult, StatResult, ProcessOutput, ProcessInfo, PortInfo, from
// package tool) are boxsh's public Go API: programs outside this module
// may build on them, and they change only compatibly. Every other package of the module (rpc,
// frame, agent, runtime, policy, tool's other names) is boxsh's own and may
// change in any release; within the module, only programs (cmd/) and tests
// (integration/) import this package (see internal/layout).
//
// # The client
//
// Start runs `boxsh --rpc` (found beside the program, on PATH, or at
// Options.Binary) with a sandbox, binds, network policy and the rest of
// Options, and waits until it serves. Its calls are safe for concurrent
// use: Exec (a shell command or an argv, with cwd, env, stdin and
// timeout), Read, ReadFile, Write, Edit, List, Stat and the terminal
// tools. Cancelling a call's context sends notifications/cancelled (the
// server kills the call's processes) and returns at once.
//
// Errors are typed: *StartError when Start is refused (a configuration
// the client or the server rejects, a missing boxsh-init: starting again
// does not help), *ProtocolError for requests the server refuses,
// *ToolError for tools that ran and failed (a bash command that exits
// non-zero is not one: its ExecResult says so), *ServerGoneError when the
// server died after it started, with its last stderr lines. Close ends
// the server and waits for it; after a crash, Start a new Client. On
// Linux the server dies with the program that started it, however that
// program dies.
//
// Supported says whether this machine can run the sandbox, and why not.
//
// # Many sandboxes
//
// NewServer is a client of a server of many sandboxes (boxsh --rpc
// --listen --sandboxes), and StartServer runs one and returns it once it
// listens. Server creates, lists, snapshots, forks, restores and deletes
// sandboxes, reviews and applies a sandbox's changes to the workspace
// (Changes, Diff, Apply), and Sandbox gives a Client of one sandbox.
//
// # Sessions
//
// Sessions are package client/session's, which programs that only review
// and apply (boxsh changes, diff, apply) use alone; the names here are its,
// and the client's Session adds Start. NewSession makes a copy-on-write session on a directory, SRC: its DST,
// the overlay's work directory and its metadata live under
// SessionOptions.BaseDir (default $XDG_STATE_HOME/boxsh/sessions), mode
// 0700. Session.Start runs a sandboxed server whose commands see SRC but
// write to DST: inside, the session's view of SRC is at DST's path, where
// commands start; the session's Client translates SRC's paths in its file
// calls and ExecRequest.Cwd to it, and those List and Stat answer back.
// Then:
//
//   - Changes lists what differs (added, modified, deleted, directory
//     replaced, type, mode and symbolic link changes), read from DST, the
//     overlay's upper directory;
//   - Diff shows them as a unified diff;
//   - Apply writes them into SRC, deletions included, each file
//     atomically, never following a symbolic link; it refuses paths the
//     host changed in SRC since the session started (conflicts) and never
//     applies protected paths (git hooks and configuration, agent and IDE
//     settings, shell start-up files);
//   - Discard throws the session away.
//
// A session is locked while a server of Session.Start runs on it: a
// second Start and Discard refuse it (ErrSessionInUse). Sessions outlive
// their owner: RecoverSessions finds those whose owner process died and
// that no server uses, to apply or discard. The boxsh command offers the same on
// a DST, for --try users and CI jobs: boxsh changes, diff, apply, discard
// and sessions.
package client
