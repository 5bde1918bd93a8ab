// Package plan builds the plan of a sandbox: the one place that says what
// a sandbox is. Build makes it; shell mode, --try and -- CMD (ModeExec),
// boxsh --rpc --sandbox (ModeServe) and boxsh spec (TargetPrint or
// TargetBundle) all describe what they want in a Config and run, or
// print, the Plan it gives. The plan is made of the host facts its caller
// gathered (host.Gather) and reads nothing itself: what it names on the
// host is made by host.Prepare, the one step that changes the host; every
// function of this package is free of host side effects, and its tests
// never touch the host.
//
// Build's steps, in order:
//
//  1. planProcess: the first process: boxsh-init serving calls on its
//     frame socket (ModeServe), or boxsh-init --exec running the command
//     (ModeExec), with boxsh-init's options (frame.InitOptions) and the
//     descriptors it finds open; the policy's limits (as boxsh-init
//     options for ModeServe, as rlimits of every process for ModeExec)
//     and the limit of open files boxsh was started with (an rlimit of
//     every process: HostFacts.NoFile);
//     the proxy's descriptor and variables under an allowlist network
//     policy.
//  2. BuildSpec: the OCI runtime spec of the sandbox and that process
//     (its mounts and process are described below).
//  3. The run-time adjustments, which boxsh makes when it starts the
//     sandbox itself and which a spec file either carries or (where
//     runtime-spec cannot say it, or the printed spec must run under any
//     runtime) names in an annotation (annotationPrefix): adjustCgroup,
//     adjustSeccomp, adjustParentDeath, adjustDevices, adjustInlineEtc,
//     adjustPlaceholders, adjustFiles, adjustCowDirs, adjustPrepare.
//
// # Mounts
//
// BuildSpec describes the sandbox as an OCI runtime spec (config.json).
// Its root is an empty directory, read-only, which host.Prepare fills with
// mount points and the symlinks of a merged /usr (rootEntries).
// Everything the sandbox sees is mounted into it, in this order:
//
//  1. /proc (a fresh procfs of the sandbox's PID namespace), /dev (tmpfs
//     with the runtime's default devices: null, zero, full, random,
//     urandom, tty, bind-mounted from the host when rootless), /dev/pts (a
//     new devpts instance), /dev/shm, /dev/mqueue. /sys is not mounted, as
//     in boxsh v3: nothing a shell needs lives there and it describes the
//     host's hardware.
//  2. The system directories, read-only (SystemPaths): /usr, and /bin
//     /sbin /lib /lib32 /lib64 /libx32 when they are real directories on
//     the host (when they are symlinks, as on merged-/usr systems,
//     host.Prepare makes the same symlinks in the root instead).
//  3. Selected /etc entries, read-only: the ones programs need to run and
//     to resolve names and certificates (EtcPaths), where they exist; an
//     entry that is a symlink into /usr or /proc is made as a symlink in
//     the root instead (etcSymlink). With policy.Sandbox.HostSystem
//     (--try), the whole of /etc, /var and /run instead (HostSystemPaths),
//     as boxsh v3 binds them.
//  4. /tmp, a fresh writable tmpfs.
//  5. The host's boxsh-init at frame.InitMountPath and its fork-server
//     library at frame.ForkServerMountPath, read-only (when given).
//  6. The tree of the user's directories, ordered so that a mount always
//     comes after those that contain it (a stable sort by the depth of
//     the destination; flag order otherwise): a tmpfs at a home no bind
//     shows (privateHome) and the --cache directory at its .cache
//     (cacheDir); the --bind mounts, ro:PATH and wr:PATH as recursive
//     binds at PATH, cow:SRC:DST as an overlay at DST (see CowDirs); a
//     writable home made read-only over itself (HostPath.Tree); the
//     directories pinned onto themselves, writable, above the protected
//     paths and the paths of the file rules (HostPath.Pins,
//     HostPath.Rebind, RuledPath.Pins). boxsh v3 mounts the ro and wr
//     binds in flag order, then the cow binds: the two orders differ only
//     where v3 let a mount hide a bind inside it (a bind given before one
//     that contains it, or a ro or wr bind in a cow DST).
//  7. With policy.Sandbox.InPlace, each cow bind's merged view at its SRC
//     too (inPlaceViews).
//  8. The protected paths (SpecConfig.Protect, host.GatherProtection): the
//     shell start-up files, credentials and git hooks that a wr bind
//     exposes, bound read-only over themselves, or a read-only placeholder
//     over one that is missing.
//  9. The file rules (fileRuleMounts): denyWrite paths read-only over
//     themselves, denyRead paths covered by an unreadable placeholder.
//
// # Process
//
// The process runs as uid 0 and gid 0 of a user namespace where they are
// the caller's uid and gid (one id each; the caller's supplementary
// groups are mapped each to itself), in new mount, PID, IPC and UTS
// namespaces (and network, with --new-net-ns: the runtime brings up
// loopback only), with no new privileges, Docker's default capabilities
// but CAP_DAC_OVERRIDE (which count only inside the namespace), the
// seccomp filter of DefaultSeccomp and runc's default masked and
// read-only paths. The policy's limits are rlimits (Limits); only a
// sandbox started by root asks for a cgroup (Limits.Cgroup,
// host.SandboxCgroup), so that a rootless runtime needs none. The process
// starts in the caller's directory, moved into the cow DST when it is in
// a cow SRC, or in / when the sandbox does not show it (SandboxCwd).
package plan
