package main

import (
	"errors"
	"os"
	"os/exec"

	"github.com/hashicorp/go-hclog"

	"golang.org/x/term"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/runtime"
)

// runSandboxedShell runs the shell (or the command after --) under the
// Seatbelt profile of the sandbox and policy, with stdio passed through,
// and returns its exit status.
func runSandboxedShell(opts options, log hclog.Logger) int {
	sb, cwd, home, run, err := prepareSandboxHere(opts.sandbox)
	if err != nil {
		return fail(err)
	}
	defer run.Done()
	record, err := openShellAudit(opts, sb, log)
	if err != nil {
		return fail(err)
	}
	defer record.close()
	argv, env := sandboxedCommand(opts, term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd())))
	in := seatbeltInputs(sb, opts.policy, home, cwd)
	in.Proxy = record.proxy()
	cmd, stop, err := runtime.SandboxCommand(in, env, argv, log)
	if err != nil {
		return fail(err)
	}
	defer stop()
	if len(opts.publish) > 0 {
		// The sandbox's loopback is the host's: the ports connect to it
		// directly, as the servers' do on macOS.
		ports, err := runtime.NewPorts(nil, log)
		if err != nil {
			return fail(err)
		}
		defer ports.Close()
		if err := publishAll(opts.publish, ports.Expose, sharesHostNetwork(opts), os.Stderr); err != nil {
			return fail(err)
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	record.started()
	if err = cmd.Start(); err == nil {
		run.Started()
		err = cmd.Wait()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		record.ended(argv, 0)
		return 0
	case errors.As(err, &ee):
		code := proc.ExitStatus(ee.ProcessState)
		record.ended(argv, code)
		return code
	}
	log.Debug("sandbox", "error", err)
	return fail(err)
}
