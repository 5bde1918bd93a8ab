package tool

// The names of the management tools of a server of many sandboxes (see
// ManageSet): the calls of its REST API, as tools.
const (
	CreateSandbox   = "create_sandbox"
	ListSandboxes   = "list_sandboxes"
	DeleteSandbox   = "delete_sandbox"
	SnapshotSandbox = "snapshot_sandbox"
	ListSnapshots   = "list_snapshots"
	DeleteSnapshot  = "delete_snapshot"
	ForkSandbox     = "fork_sandbox"
	RestoreSandbox  = "restore_sandbox"
	SandboxChanges  = "sandbox_changes"
	SandboxDiff     = "sandbox_diff"
	ApplySandbox    = "apply_sandbox"
	// ManageStats is the management twin of a sandbox's SandboxStats, of
	// the same name.
	ManageStats = "sandbox_stats"
)

// The arguments of the management tools. A sandbox's or snapshot's name
// is 1 to 63 letters, digits, '-' or '_', starting with a letter or digit.
// They name no other member, and refuse none.
type (
	// CreateSandboxArgs are the arguments of create_sandbox.
	CreateSandboxArgs struct {
		_    struct{} `additionalProperties:"true"`
		Name string   `json:"name" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The new sandbox's name: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
		From string   `json:"from,omitempty" doc:"\"workspace\" (default), \"empty\" or \"snapshot:NAME\""`
	}
	// ManageNoArgs are the (absent) arguments of list_sandboxes and
	// list_snapshots.
	ManageNoArgs struct {
		_ struct{} `additionalProperties:"true"`
	}
	// DeleteSandboxArgs are the arguments of delete_sandbox.
	DeleteSandboxArgs struct {
		_    struct{} `additionalProperties:"true"`
		Name string   `json:"name" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The sandbox: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
	}
	// SnapshotSandboxArgs are the arguments of snapshot_sandbox.
	SnapshotSandboxArgs struct {
		_       struct{} `additionalProperties:"true"`
		Sandbox string   `json:"sandbox" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The sandbox: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
		Name    string   `json:"name" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The snapshot's name: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
	}
	// DeleteSnapshotArgs are the arguments of delete_snapshot.
	DeleteSnapshotArgs struct {
		_    struct{} `additionalProperties:"true"`
		Name string   `json:"name" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The snapshot: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
	}
	// ForkSandboxArgs are the arguments of fork_sandbox.
	ForkSandboxArgs struct {
		_       struct{} `additionalProperties:"true"`
		Sandbox string   `json:"sandbox" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The sandbox: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
		Name    string   `json:"name" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The new sandbox's name: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
	}
	// RestoreSandboxArgs are the arguments of restore_sandbox.
	RestoreSandboxArgs struct {
		_        struct{} `additionalProperties:"true"`
		Sandbox  string   `json:"sandbox" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The sandbox: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
		Snapshot string   `json:"snapshot" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The snapshot: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
	}
	// SandboxArgs are the arguments of sandbox_changes and of the
	// management sandbox_stats.
	SandboxArgs struct {
		_       struct{} `additionalProperties:"true"`
		Sandbox string   `json:"sandbox" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The sandbox: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
	}
	// SandboxDiffArgs are the arguments of sandbox_diff.
	SandboxDiffArgs struct {
		_       struct{} `additionalProperties:"true"`
		Sandbox string   `json:"sandbox" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The sandbox: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
		Path    string   `json:"path,omitempty" doc:"Only this path's changes (relative to the workspace)"`
	}
	// ApplySandboxArgs are the arguments of apply_sandbox.
	ApplySandboxArgs struct {
		_       struct{} `additionalProperties:"true"`
		Sandbox string   `json:"sandbox" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The sandbox: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
		DryRun  bool     `json:"dry_run,omitempty" doc:"Tell what would be applied; change nothing"`
		Paths   []string `json:"paths,omitempty" doc:"Only these paths (relative to the workspace); none: all"`
	}
)

// manage returns the Info of a management tool named name, at order in
// the list. The tool acts on the sandbox its member target names. With
// target "", the audit log does not record its calls.
func manage(name string, order int, target, title string, ro, destructive bool, description string) Info {
	return Info{Name: name, Order: order, Set: ManageSet, Side: Front, Description: description,
		Annotations: Annotations{Title: title, ReadOnlyHint: ro, DestructiveHint: destructive},
		Audit:       AuditRule{Target: target}}
}

// The definitions of the management tools.
var (
	CreateSandboxDef = Define[CreateSandboxArgs, NoOutput](manage(CreateSandbox, 10, "name", "Create Sandbox", false, false,
		"Create a sandbox: its own boxsh-init, workers, network namespace, and a copy-on-write view of the server's workspace (from \"workspace\", the default), an empty directory (\"empty\") or a snapshot's files (\"snapshot:NAME\"). Answers its MCP endpoint and its bearer token (given only here)."))
	ListSandboxesDef = Define[ManageNoArgs, NoOutput](manage(ListSandboxes, 20, "", "List Sandboxes", true, false,
		"List the sandboxes: name, origin, age, idle time, calls."))
	DeleteSandboxDef = Define[DeleteSandboxArgs, NoOutput](manage(DeleteSandbox, 30, "name", "Delete Sandbox", false, true,
		"Delete a sandbox: its processes stop and its files go."))
	SnapshotSandboxDef = Define[SnapshotSandboxArgs, NoOutput](manage(SnapshotSandbox, 40, "sandbox", "Snapshot Sandbox", false, false,
		"Freeze a sandbox's files as a named read-only snapshot. Its processes are paused (not stopped) while the files are copied, so that the snapshot is consistent; writes wait, none is lost."))
	ListSnapshotsDef = Define[ManageNoArgs, NoOutput](manage(ListSnapshots, 50, "", "List Snapshots", true, false,
		"List the snapshots: name, the sandbox taken, size, how long the sandbox was paused."))
	DeleteSnapshotDef = Define[DeleteSnapshotArgs, NoOutput](manage(DeleteSnapshot, 60, "name", "Delete Snapshot", false, true,
		"Delete a snapshot. Sandboxes started from it keep their files."))
	ForkSandboxDef = Define[ForkSandboxArgs, NoOutput](manage(ForkSandbox, 70, "name", "Fork Sandbox", false, false,
		"Create a sandbox with another sandbox's files as they are now (a snapshot, then a create from it). Answers the new sandbox's endpoint and token."))
	RestoreSandboxDef = Define[RestoreSandboxArgs, NoOutput](manage(RestoreSandbox, 80, "sandbox", "Restore Sandbox", false, true,
		"Reset a sandbox to a snapshot: its processes are restarted, its files become the snapshot's. The snapshot must be of a sandbox with the same origin (workspace or empty)."))
	SandboxChangesDef = Define[SandboxArgs, NoOutput](manage(SandboxChanges, 90, "", "Sandbox Changes", true, false,
		"List a sandbox's changes to the workspace (as boxsh changes --json)."))
	SandboxDiffDef = Define[SandboxDiffArgs, NoOutput](manage(SandboxDiff, 100, "", "Sandbox Diff", true, false,
		"The unified diff of a sandbox's changes to the workspace (as boxsh diff), or of one path's."))
	ApplySandboxDef = Define[ApplySandboxArgs, NoOutput](manage(ApplySandbox, 110, "sandbox", "Apply Sandbox Changes", false, true,
		"Apply a sandbox's changes to the workspace on the host (as boxsh apply): conflicts (paths the host changed since the sandbox started) and protected paths are refused."))
	ManageStatsDef = Define[SandboxArgs, NoOutput](manage(ManageStats, 120, "sandbox", "Sandbox Stats", true, false,
		"A sandbox's figures (as its own sandbox_stats tool answers them): CPU time, memory and processes, disk used by its writable layer, bytes through its proxy, uptime."))
)
