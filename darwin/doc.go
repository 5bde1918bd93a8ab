// Package darwin generates the macOS Seatbelt profile of a boxsh sandbox.
//
// Generate writes the profile in the Sandbox Profile Language (SBPL, a Scheme
// dialect). Its inputs are the sandbox of the command line (policy.Sandbox)
// and the merged policy (policy.Policy).
//
// In SBPL the last rule that matches an operation decides it. The profile is
// built in this order:
//
//   - deny everything by default;
//   - allow what a shell needs: running programs, signals to its own
//     processes, a few system services, the devices, reading the system's
//     directories;
//   - allow reading the bound directories, writing the writable ones, and the
//     network when it is not disabled;
//   - deny the policy's denyRead paths, then allow its allowRead paths inside
//     them (only where the sandbox may read otherwise);
//   - deny writing the sources of cow binds;
//   - last, deny the policy's denyWrite paths and the hard-denied paths (shell
//     start-up files, git hooks and configuration, editor settings), so that
//     nothing lifts them.
//
// Name patterns (".env", "*.pem") become regular expressions that match at any
// depth inside the bound directories. Every deny matches either case of each
// letter, because macOS's default file system is case-insensitive (.ENV is
// .env). The shared temporary directories are read-only. /System/Volumes,
// which reaches the data volume by another path, is never readable.
// docs/macos.md gives each rule's reason and source.
//
// The sandbox matches resolved paths, so the caller passes paths with their
// symbolic links resolved. Generate itself rewrites the top-level /etc, /tmp
// and /var links to /private, and reads nothing from the host.
//
// # Testing
//
// Nothing here runs on Linux, where boxsh is built and tested. Instead:
//
//   - the tests compare the profiles of sample configurations with golden
//     files in testdata, which must be reviewed by eye (go test ./darwin
//     -update rewrites them);
//   - a static checker (checker_test.go) reads the profiles back and decides
//     operations on them as Seatbelt does, for every network mode and kind of
//     bind.
//
// Profiles should be tried with sandbox-exec on a Mac when they change (see
// the checklist in docs/macos.md).
//
// # Applying the profile
//
// The front applies the profile on macOS, not this package. It either calls
// sandbox_init(3) in the process that then executes the shell, or runs the
// shell under sandbox-exec -p PROFILE. Copy-on-write binds are the front's
// too: it clones the source into the destination (clonefile) before the
// sandbox starts, and the profile only lets the sandbox read the source and
// write the destination.
package darwin
