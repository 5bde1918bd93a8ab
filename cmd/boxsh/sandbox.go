package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime"
	"github.com/boxsh/boxsh/runtime/host"
)

// sandboxRun is what a start of a sandbox leaves to do:
//   - Started announces where --try saves the changes, once the sandbox
//     runs;
//   - Done removes what --try made that nobody needs, once it has ended.
type sandboxRun struct {
	changes string
	ran     bool
	finish  func(started bool)
}

// Started announces where --try saves the changes: only once the sandbox
// runs, as nothing is saved when it cannot start.
func (r *sandboxRun) Started() {
	r.ran = true
	if r.changes != "" {
		fmt.Fprintf(os.Stderr, "boxsh: changes will be saved in %s\n", r.changes)
	}
}

// Done removes, once the sandbox has ended or failed to start, --try's
// overlay work directory, and all it made when nothing ran.
func (r *sandboxRun) Done() { r.finish(r.ran) }

// prepareSandbox checks that this boxsh can make the sandbox sb asks for
// and turns --try into its binds. Call the run's Started once the sandbox
// runs and its Done once it has ended (or failed to start).
func prepareSandbox(sb policy.Sandbox, cwd, home string) (_ policy.Sandbox, _ *sandboxRun, err error) {
	run := &sandboxRun{finish: func(bool) {}}
	if !sb.Enabled && !sb.Try {
		return sb, run, nil
	}
	if err := runtime.SandboxSupported(); err != nil {
		return sb, run, err
	}
	if !sb.Try {
		return sb, run, nil
	}
	sb, changes, err := host.ResolveTry(sb, cwd, home)
	if err != nil {
		return sb, run, err
	}
	run.changes = changes
	cow := sb.Binds[len(sb.Binds)-1:] // --try's own
	try := startTrySession(cwd, changes)
	run.finish = func(started bool) {
		try.finish(started)
		host.RemoveCowWorkDirs(cow)
		if !started {
			os.RemoveAll(filepath.Dir(changes))
		}
	}
	return sb, run, nil
}

// prepareSandboxHere is prepareSandbox for the caller's working directory
// and home, which it returns too.
func prepareSandboxHere(sb policy.Sandbox) (_ policy.Sandbox, cwd, home string, run *sandboxRun, err error) {
	if cwd, err = os.Getwd(); err != nil {
		return sb, "", "", &sandboxRun{finish: func(bool) {}}, err
	}
	home = os.Getenv("HOME")
	sb, run, err = prepareSandbox(sb, cwd, home)
	return sb, cwd, home, run, err
}

// sandboxedCommand returns what shell mode runs in a sandbox. argv is the
// shell with its arguments, or the command after --. env is the policy's
// environment, plus the boxsh prompt for an interactive shell on a
// terminal.
func sandboxedCommand(opts options, tty bool) (argv, env []string) {
	env = policy.CommandEnv(opts.policy, os.Environ())
	if opts.mode == modeCommand {
		return opts.args, env
	}
	argv = []string{opts.shell}
	// As boxsh v3: -i is not forced on a shell without a terminal.
	if opts.interactive && tty {
		argv = append(argv, "-i")
	}
	argv = append(argv, opts.args...)
	if (opts.interactive && tty) || (len(opts.args) == 0 && tty) {
		env = append(env, "PS1="+prompt(opts.sandbox.Try))
	}
	return argv, env
}

// seatbeltInputs returns the inputs of the macOS profile of the resolved
// sandbox sb with the policy p. They are for a command started in cwd by
// a user whose home is home.
//
// The inputs are the same for both users of the profile:
//   - the sandbox that runs (shell and --rpc), where
//     runtime.SandboxCommand adds the proxy's port and the sandbox's own
//     temporary directory when it makes them;
//   - boxsh spec --format sbpl, which shows runtime.PrivateTmpStandIn and
//     port 0 for them.
func seatbeltInputs(sb policy.Sandbox, p policy.Policy, home, cwd string) runtime.SeatbeltInputs {
	return runtime.SeatbeltInputs{Sandbox: sb, Policy: p, Home: home, Cwd: cwd, TmpDir: os.Getenv("TMPDIR")}
}
