package tool

// The tools about the session itself, beyond v3. The front answers them,
// not boxsh-init: the front keeps the audit log outside the sandbox, and
// sees the sandbox's processes, copy-on-write layers and proxy from
// outside.
const (
	Audit        = "audit"
	SandboxStats = "sandbox_stats"
)

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
	// Reason and Allow explain a refusal (see NetworkRefusal).
	Reason string `json:"reason,omitempty" required:"false" doc:"Why the destination was refused (kind network, refused)"`
	Allow  string `json:"allow,omitempty" required:"false" doc:"The setting that would allow the refused destination, if any (kind network)"`
	// Answer is the answer of the client asked (--network-ask); Client
	// then names that client.
	Answer string `json:"answer,omitempty" required:"false" doc:"When the MCP client was asked about the destination (--network-ask): its answer, \"allow_once\", \"allow_sandbox\" or \"deny\", or \"none\" when it gave none in time or could not be asked; client then names who was asked (kind network)"`
	// Secrets name the secrets the proxy put in the request, never
	// their values.
	Secrets []string `json:"secrets,omitempty" required:"false" doc:"The secrets (--secret) the proxy put in the request in place of their stand-ins, by name (kind network)"`
}

// AuditOutput is the structured result of audit.
type AuditOutput struct {
	Path    string       `json:"path" doc:"The audit log's file on the host"`
	Entries []AuditEntry `json:"entries" nullable:"false" doc:"The latest entries, oldest first"`
	// Skipped counts lines among the last read that are not entries.
	Skipped int `json:"skipped,omitempty" required:"false" doc:"Lines among those read that are not complete entries (a writer killed while writing one)"`
}

// The values of StatsOutput.Source.
const (
	StatsCgroup = "cgroup"
	StatsProc   = "proc"
	StatsNone   = "none"
)

// Bounds of the walk of each copy-on-write layer by sandbox_stats: the
// entries, and the levels of directories.
const (
	StatsMaxDiskEntries = 100000
	StatsMaxDiskDepth   = 64
)

// StatsOutput is the structured result of sandbox_stats.
type StatsOutput struct {
	Source string `json:"source" enum:"cgroup,proc,none" doc:"Where the processor, memory and process figures come from: \"cgroup\" (the sandbox's own cgroup, which a sandbox started by root gets), \"proc\" (the sandbox's processes read in /proc), \"none\" (no /proc: the figures are 0)"`
	// Sandboxed tells whether the tools run in a sandbox.
	Sandboxed bool `json:"sandboxed" doc:"Whether the tools run in a sandbox (false: the figures are those of boxsh-init's process tree, and of what it left behind)"`
	// CPUUserSeconds and CPUSystemSeconds are processor time.
	CPUUserSeconds   float64 `json:"cpu_user_seconds" doc:"Processor time in user mode of the sandbox's processes: with source proc, of those alive and of the children they have waited for"`
	CPUSystemSeconds float64 `json:"cpu_system_seconds" doc:"Processor time in the kernel of the sandbox's processes, counted as cpu_user_seconds is"`
	// MemoryBytes is the cgroup's memory, or the sum of the processes'
	// resident sets.
	MemoryBytes int64 `json:"memory_bytes" doc:"Memory in use: the cgroup's memory.current, or the sum of the resident sets of the processes (a page shared by several counted for each)"`
	Processes   int   `json:"processes" doc:"Processes (not threads) running now, boxsh-init included"`
	// DiskBytes is the space used by the copy-on-write binds' changes.
	DiskBytes int64    `json:"disk_bytes" doc:"Disk space used by the writable layer of the copy-on-write binds (the directories in disk_dirs, which receive the changes); 0 when disk_dirs is empty"`
	DiskDirs  []string `json:"disk_dirs" nullable:"false" doc:"The host directories measured for disk_bytes: the writable layer (DST) of each copy-on-write bind; empty without any"`
	// DiskTruncated tells that DiskBytes stopped at the walk's bound.
	DiskTruncated bool `json:"disk_truncated,omitempty" required:"false" doc:"Whether disk_bytes stopped short: after 100000 entries, or below 64 levels of directories"`
	// ProxyBytes are the bytes through the network proxy.
	ProxyBytesOut int64 `json:"proxy_bytes_out" doc:"Bytes the sandbox sent to the network proxy (--network allowlist) since the server started, the proxy protocol's own included; 0 without a proxy"`
	ProxyBytesIn  int64 `json:"proxy_bytes_in" doc:"Bytes the sandbox received from the network proxy, counted as proxy_bytes_out is"`
	// UptimeSeconds is since the running boxsh-init started.
	UptimeSeconds float64 `json:"uptime_seconds" doc:"Seconds since the sandbox (the running boxsh-init) started"`
	// NetworkRefusals are the latest refusals of the proxy.
	NetworkRefusals []NetworkRefusal `json:"network_refusals,omitempty" required:"false" doc:"The latest destinations the network proxy refused (at most 32, oldest first), each with how many times; absent when none"`
	// SecretUses count the requests each secret went into.
	SecretUses []SecretUse `json:"secret_uses,omitempty" required:"false" doc:"The requests the proxy put each secret (--secret) in, by host; absent when none"`
}

// SecretUse counts the requests a secret went into to one host.
type SecretUse struct {
	Secret   string `json:"secret" doc:"The secret's name (never its value)"`
	Host     string `json:"host" doc:"The host the requests went to"`
	Requests int    `json:"requests" doc:"How many requests"`
}

// The definitions of the tools about the session itself.
var (
	AuditDef = Define[AuditArgs, AuditOutput](Info{Name: Audit, Order: 180, BeyondV3: true, Side: Front,
		Description: "Return the latest entries of the audit log, which the front keeps outside the sandbox: each tool call (tool, argument summary, exit code or error, duration, result size, cancelled or timed out) and each network decision of the proxy. Fails when boxsh runs without an audit log (--audit FILE).",
		Annotations: Annotations{"Audit Log", true, false}})
	SandboxStatsDef = Define[NoArgs, StatsOutput](Info{Name: SandboxStats, Order: 190, BeyondV3: true, Side: Front,
		Description: "Measure the sandbox: processor time (user and system), memory and number of its processes (from its cgroup when it has one, else from /proc: source says which), disk space used by the changes of its copy-on-write binds, bytes through its network proxy, and uptime.",
		Annotations: Annotations{"Sandbox Stats", true, false}})
)
