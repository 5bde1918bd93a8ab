// Package client runs boxsh from Go, as a typed client of its MCP server
// (boxsh --rpc).
//
// It also runs copy-on-write sessions, whose changes are reviewed, then
// applied to the project or thrown away.
//
// # Public API
//
// boxsh's public Go API is made of:
//
//   - this package;
//   - package client/session;
//   - package client/apitype, the wire types of a server of many sandboxes
//     (SandboxInfo and SnapshotInfo embed them; SandboxDisk and CreateRequest
//     are them);
//   - the tool types this package names through aliases: ReadRequest, Edit,
//     EditResult, ListRequest, ListResult, StatResult, ProcessOutput,
//     ProcessInfo, PortInfo.
//
// Programs outside this module may build on them, and they change only
// compatibly. The module's other importable packages (rpc, runtime, policy,
// darwin and their subpackages) are boxsh's own and may change in any release.
// Within the module, only programs (cmd/) and tests (integration/) import this
// package; internal/layout checks that.
//
// # The client
//
// Start runs `boxsh --rpc` with a sandbox, binds, network policy and the rest
// of Options, and waits until it serves. The binary is Options.Binary, or else
// the one beside the program, or else the one on PATH.
//
// A Client's calls are safe for concurrent use: Exec (a shell command or an
// argv, with cwd, env, stdin and timeout), Read, ReadFile, Write, Edit, List,
// Stat and the terminal tools. Cancelling a call's context sends
// notifications/cancelled, so the server kills the call's processes, and the
// call returns at once.
//
// Errors are typed:
//
//   - *StartError: Start was refused, for a configuration the client or the
//     server rejects or a missing boxsh-init. Starting again does not help.
//   - *ProtocolError: the server refused a request.
//   - *ToolError: a tool ran and failed. A bash command that exits non-zero is
//     not one; its ExecResult says so.
//   - *ServerGoneError: the server died after it started. It carries the
//     server's last stderr lines.
//
// Close ends the server and waits for it. After a crash, Start a new Client.
// On Linux the server dies with the program that started it, however that
// program dies.
//
// Supported says whether this machine can run the sandbox, and why not.
//
// # Many sandboxes
//
// NewServer returns a client of a server of many sandboxes (boxsh --rpc
// --listen --sandboxes), and StartServer runs such a server and returns once
// it listens. A Server creates, lists, snapshots, forks, restores and deletes
// sandboxes. It reviews and applies a sandbox's changes to the workspace
// (Changes, Diff, Apply), and Server.Sandbox gives a Client of one sandbox.
//
// # Sessions
//
// Sessions come from package client/session; the names here are its, and this
// package's Session adds Start. Programs that only review and apply (boxsh
// changes, diff, apply) can use client/session alone.
//
// NewSession makes a copy-on-write session on a directory, SRC. Its DST, the
// overlay's work directory and its metadata live under SessionOptions.BaseDir
// (default $XDG_STATE_HOME/boxsh/sessions), with mode 0700.
//
// Session.Start runs a sandboxed server whose commands see SRC but write to
// DST. Inside the sandbox, the session's view of SRC is at DST's path, where
// commands start. The session's Client translates SRC's paths in its file
// calls and in ExecRequest.Cwd, and translates the paths List and Stat answer
// back. Then:
//
//   - Changes lists what differs, read from DST (the overlay's upper
//     directory): added, modified, deleted, directory replaced, and type, mode
//     and symbolic link changes.
//   - Diff shows the changes as a unified diff.
//   - Apply writes them into SRC, deletions included, each file atomically and
//     never following a symbolic link. It refuses paths the host changed in
//     SRC since the session started (conflicts). It never applies protected
//     paths: git hooks and configuration, agent and IDE settings, shell
//     start-up files.
//   - Discard throws the session away.
//
// A session is locked while a server of Session.Start runs on it; a second
// Start, and Discard, refuse it with ErrSessionInUse. Sessions outlive their
// owner: RecoverSessions finds those whose owner process died and that no
// server uses, to apply or discard. The boxsh command offers the same on a
// DST, for --try users and CI jobs: boxsh changes, diff, apply, discard and
// sessions.
package client
