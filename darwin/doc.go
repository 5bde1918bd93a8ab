// Package darwin generates the macOS sandbox profile of a boxsh sandbox:
// a Seatbelt profile, in the Sandbox Profile Language (SBPL, a Scheme
// dialect), from the sandbox of the command line (policy.Sandbox) and the
// merged policy (policy.Policy).
//
// The profile denies everything by default, then allows what a shell
// needs (running programs, signals to its own processes, a few system
// services, the devices, reading the system's directories), reading the
// bound directories and writing the writable ones, and the network when
// it is not disabled. The policy's rules follow: denyRead denies after
// the allows, allowRead punches holes in those denies (only where the
// sandbox may read otherwise), and denyWrite and the hard-denied paths
// (shell start-up files, git hooks and configuration, editor settings)
// come last, so that nothing lifts them. In SBPL the last rule that
// matches an operation decides it. Name patterns (".env", "*.pem") become
// regular expressions matching at any depth inside the bound
// directories. Every deny matches either case of each letter, because
// macOS's default file system is case-insensitive (.ENV is .env). The
// sources of cow binds are denied writing after every allow; the shared
// temporary directories are read-only; /System/Volumes, the data volume
// by another path, is never readable. docs/macos.md gives each rule's
// reason and source.
//
// The sandbox matches resolved paths, so the caller passes paths with
// their symbolic links resolved; Generate rewrites the top-level /etc,
// /tmp and /var links to /private itself, and reads nothing from the
// host.
//
// Nothing here can be run on Linux, where boxsh is built and tested: the
// tests compare the profiles of sample configurations with golden files
// in testdata (go test ./darwin -update rewrites them), which must be
// reviewed by eye, and a static checker (checker_test.go) reads the
// profiles back and decides operations on them as Seatbelt does (the last
// matching rule wins) for every network mode and kind of bind. They
// should be tried with sandbox-exec on a Mac when they change (the
// checklist in docs/macos.md).
//
// The front applies the profile on macOS (not in this package): either
// with sandbox_init(3) in the process that then executes the shell, or by
// running the shell under sandbox-exec -p PROFILE. Copy-on-write binds
// are the front's too: it clones the source into the destination
// (clonefile) before the sandbox starts; the profile only lets the
// sandbox read the source and write the destination.
package darwin
