// Package plan builds the plan of a sandbox, the one place that says what a
// sandbox is.
//
// Callers describe what they want in a Config, and Build returns the Plan to
// run or print. The callers are:
//
//   - shell mode, --try and -- CMD (ModeExec);
//   - boxsh --rpc --sandbox (ModeServe);
//   - boxsh spec (TargetPrint or TargetBundle).
//
// The plan is made of the host facts its caller gathered (host.Gather). The
// package reads nothing from the host and changes nothing on it: host.Prepare
// makes what the plan names. Its tests never touch the host.
//
// Build takes three steps, in order:
//
//  1. It plans the first process. That is boxsh-init serving calls on its
//     channel socket (ModeServe), or boxsh-init --exec running the command
//     (ModeExec). It carries boxsh-init's options (initproto.InitOptions),
//     the descriptors boxsh-init finds open, and the policy's limits: as
//     boxsh-init options for ModeServe, as rlimits of every process for
//     ModeExec. The limit of open files boxsh was started with is an rlimit
//     of every process (HostFacts.NoFile). Under an allowlist network
//     policy, the process also gets the proxy's descriptor and variables.
//  2. BuildSpec writes the OCI runtime spec of the sandbox and that process
//     (see Mounts and Process below).
//  3. It adds the run-time adjustments that boxsh makes when it starts the
//     sandbox itself. A spec file carries them, or names them in an
//     annotation where runtime-spec cannot express them or the printed spec
//     must run under any runtime.
//
// # Mounts
//
// BuildSpec describes the sandbox as an OCI runtime spec (config.json). Its
// root is an empty, read-only directory. host.Prepare fills it with mount
// points and the symlinks of a merged /usr. Everything the sandbox sees is
// mounted into it, in this order:
//
//  1. /proc, /dev, /dev/pts, /dev/shm and /dev/mqueue. /proc is a fresh
//     procfs of the sandbox's PID namespace. /dev is a tmpfs with the
//     runtime's default devices (null, zero, full, random, urandom, tty),
//     bind-mounted from the host when rootless. /dev/pts is a new devpts
//     instance. /sys is not mounted, as in boxsh v3: nothing a shell needs
//     lives there, and it describes the host's hardware.
//  2. The system directories, read-only (SystemPaths): /usr, and /bin /sbin
//     /lib /lib32 /lib64 /libx32 when they are real directories on the host.
//     When they are symlinks, as on merged-/usr systems, host.Prepare makes
//     the same symlinks in the root instead.
//  3. Selected /etc entries, read-only, where they exist (EtcPaths): those
//     programs need to run and to resolve names and certificates. An entry
//     that is a symlink into /usr or /proc becomes a symlink in the root.
//     With policy.Sandbox.HostSystem (--try), the whole of /etc, /var and
//     /run instead (HostSystemPaths), as boxsh v3 binds them.
//  4. /tmp, a fresh writable tmpfs.
//  5. The host's boxsh-init at initproto.InitMountPath and its fork-server
//     library at initproto.ForkServerMountPath, read-only, when given.
//  6. The tree of the user's directories. A mount always comes after those
//     that contain it: a stable sort by the depth of the destination, flag
//     order otherwise. First a tmpfs at a home that no bind shows, and the
//     --cache directory at its .cache. Then the --bind mounts: ro:PATH and
//     wr:PATH as recursive binds at PATH, cow:SRC:DST as an overlay at DST
//     (see CowDirs). Then a writable home made read-only over itself
//     (HostPath.Tree). Last, the directories pinned writable onto themselves,
//     above the protected paths and the paths of the file rules
//     (HostPath.Pins, HostPath.Rebind, RuledPath.Pins). boxsh v3 mounts the
//     ro and wr binds in flag order, then the cow binds. The two orders
//     differ only where v3 let a mount hide a bind inside it: a bind given
//     before one that contains it, or a ro or wr bind inside a cow DST.
//  7. With policy.Sandbox.InPlace, each cow bind's merged view at its SRC
//     too.
//  8. The protected paths (SpecConfig.Protect, host.GatherProtection): the
//     shell start-up files, credentials and git hooks that a wr bind
//     exposes. Each is bound read-only over itself, or covered by a
//     read-only placeholder when it is missing.
//  9. The file rules: denyWrite paths are bound read-only over themselves,
//     denyRead paths are covered by an unreadable placeholder.
//
// # Process
//
// The process runs as uid 0 and gid 0 of a user namespace, where they map to
// the caller's uid and gid. The caller's supplementary groups are each mapped
// to themselves. The process gets:
//
//   - new mount, PID, IPC and UTS namespaces, and a network namespace with
//     --new-net-ns (the runtime brings up loopback only);
//   - no new privileges;
//   - Docker's default capabilities except CAP_DAC_OVERRIDE; they count only
//     inside the namespace;
//   - the seccomp filter of DefaultSeccomp;
//   - runc's default masked and read-only paths.
//
// The policy's limits are rlimits (Limits). Only a sandbox started by root
// asks for a cgroup (Limits.Cgroup, host.SandboxCgroup), so a rootless
// runtime needs none. The process starts in the caller's directory; moved
// into the cow DST when it is in a cow SRC, or in / when the sandbox does not
// show it (SandboxCwd).
package plan

// Where the steps above live, for readers of the source:
//
//   - the first process: planProcess;
//   - the run-time adjustments, each named in an annotation under
//     annotationPrefix: adjustCgroup, adjustSeccomp, adjustParentDeath,
//     adjustDevices, adjustInlineEtc, adjustPlaceholders, adjustFiles,
//     adjustCowDirs, adjustPrepare;
//   - the root's entries: rootEntries; /etc symlinks: etcSymlink;
//   - the private home and cache: privateHome, cacheDir;
//   - in-place views: inPlaceViews; file rules: fileRuleMounts.
