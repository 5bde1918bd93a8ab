package tool

// The tool about the session itself, beyond v3: the front answers it
// (it keeps the audit log outside the sandbox), not boxsh-init.
const Audit = "audit"

// Bounds of the audit tool.
const (
	// AuditDefaultLast is how many entries audit answers by default.
	AuditDefaultLast = 50
	// AuditMaxLast bounds audit's last.
	AuditMaxLast = 1000
)

// The kinds of AuditEntry.
const (
	// AuditCall is a tool call.
	AuditCall = "call"
	// AuditNetwork is a decision of the network proxy.
	AuditNetwork = "network"
	// AuditShell is a run of shell mode (boxsh -c, a script, an
	// interactive shell, -- COMMAND).
	AuditShell = "shell"
	// AuditSandbox is a management call of a server of many sandboxes
	// (create, delete, apply), its Tool the action.
	AuditSandbox = "sandbox"
)

// AuditArgs are the arguments of audit.
type AuditArgs struct {
	Last int `json:"last,omitempty" minimum:"0" doc:"How many of the latest entries to return (default 50, at most 1000)"`
}

// AuditEntry is one line of the audit log: a tool call, a network
// decision of the proxy, or a run of shell mode.
type AuditEntry struct {
	Time string `json:"time" doc:"When the call started (or the decision was made), RFC 3339 with nanoseconds, UTC"`
	Kind string `json:"kind" enum:"call,network,shell,sandbox" doc:"\"call\": a tool call; \"network\": a decision of the network proxy; \"shell\": a run of shell mode; \"sandbox\": a management call of a server of many sandboxes (tool: create, delete or apply)"`
	// Client and Sandbox say who made the call, and in which sandbox.
	Client  string `json:"client,omitempty" required:"false" doc:"Who made the call: \"stdio\", \"http session HASH\" (a digest of the Mcp-Session-Id, never the id itself), \"http ADDRESS\" or \"rest ADDRESS\" (the client's address), \"shell\""`
	Sandbox string `json:"sandbox,omitempty" required:"false" doc:"The sandbox the call ran in, when the server runs several"`
	Tool    string `json:"tool,omitempty" required:"false" doc:"The tool called (kind call), or the management action (kind sandbox)"`
	// Args is a summary of the arguments: never file contents, stdin or
	// the values of env.
	Args map[string]any `json:"args,omitempty" required:"false" doc:"Summary of the arguments: command, args, paths, ids, numbers and flags as given (long strings cut, marked by NAME_bytes with the full size); for env the names only; for file contents, stdin, edits and other text only their size in sizes (bytes of their JSON text)"`
	// ExitCode is a bash call's, or shell mode's.
	ExitCode *int `json:"exit_code,omitempty" required:"false" doc:"Exit code of a bash call or shell run (-1 on timeout)"`
	// IsError tells that the tool answered a failed result.
	IsError bool `json:"is_error,omitempty" required:"false" doc:"Whether the tool's result was a failure (isError)"`
	// Error is a protocol error answered instead of a result.
	Error       string `json:"error,omitempty" required:"false" doc:"The error answered instead of a result, if any"`
	DurationMS  int64  `json:"duration_ms" doc:"How long the call took, in milliseconds"`
	OutputBytes int64  `json:"output_bytes" doc:"Bytes of the result sent back (the encoded CallToolResult)"`
	Cancelled   bool   `json:"cancelled,omitempty" required:"false" doc:"Whether the client cancelled the call (or went away) before its answer"`
	TimedOut    bool   `json:"timed_out,omitempty" required:"false" doc:"Whether the command was killed by its timeout"`
	// Network decisions.
	Host     string `json:"host,omitempty" required:"false" doc:"Destination host name or address (kind network)"`
	Port     int    `json:"port,omitempty" required:"false" doc:"Destination port (kind network)"`
	Protocol string `json:"protocol,omitempty" required:"false" doc:"How the sandbox asked: \"connect\", \"http\" or \"socks5\" (kind network)"`
	Allowed  *bool  `json:"allowed,omitempty" required:"false" doc:"Whether the proxy let the connection through (kind network)"`
	Rule     string `json:"rule,omitempty" required:"false" doc:"The allowed or denied domain pattern that decided, empty when none matched (kind network)"`
}

// AuditOutput is the structured result of audit.
type AuditOutput struct {
	Path    string       `json:"path" doc:"The audit log's file on the host"`
	Entries []AuditEntry `json:"entries" nullable:"false" doc:"The latest entries, oldest first"`
	// Skipped counts lines among the last read that are not entries.
	Skipped int `json:"skipped,omitempty" required:"false" doc:"Lines among those read that are not complete entries (a writer killed while writing one)"`
}

func init() {
	defs = append(defs,
		def{name: Audit, description: "Return the latest entries of the audit log, which the front keeps outside the sandbox: each tool call (tool, argument summary, exit code or error, duration, result size, cancelled or timed out) and each network decision of the proxy. Fails when boxsh runs without an audit log (--audit FILE).",
			in: AuditArgs{}, out: AuditOutput{}, ann: Annotations{"Audit Log", true, false}, beyondV3: true},
	)
}
