package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/term"

	"github.com/boxsh/boxsh/internal/front/audit"
	"github.com/boxsh/boxsh/internal/proc"
)

// runShell replaces boxsh with the shell, so that exit status, signals,
// stdio and the terminal are the shell's own.
func runShell(opts options, log hclog.Logger) int {
	if opts.sandbox.Enabled || opts.sandbox.Try {
		return runSandboxedShell(opts, log)
	}
	if len(opts.publish) > 0 {
		return fail(errPublishUnsandboxed)
	}
	argv := []string{opts.shell}
	interactive := opts.interactive || (len(opts.args) == 0 && term.IsTerminal(int(os.Stdin.Fd())))
	if opts.interactive {
		argv = append(argv, "-i")
	}
	argv = append(argv, opts.args...)
	env := os.Environ()
	if interactive {
		env = append(env, "PS1="+prompt(false))
	}
	if l, err := openAudit(opts, opts.sandbox); err != nil || l != nil {
		if err != nil {
			return fail(err)
		}
		defer l.Close()
		return runAudited(l, log, opts.shell, argv, env)
	}
	return execOrFail(opts.shell, argv, env)
}

// runCommand runs the command after "--".
func runCommand(opts options, log hclog.Logger) int {
	if opts.sandbox.Enabled {
		return runSandboxedShell(opts, log)
	}
	if len(opts.publish) > 0 {
		return fail(errPublishUnsandboxed)
	}
	l, err := openAudit(opts, opts.sandbox)
	if err != nil {
		return fail(err)
	}
	if l != nil {
		defer l.Close()
	}
	began := time.Now()
	path, err := exec.LookPath(opts.args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh: %s: %v\n", opts.args[0], err)
		auditShell(l, log, opts.args, began, 127)
		return 127
	}
	if l != nil {
		return runAudited(l, log, path, opts.args, os.Environ())
	}
	return execOrFail(path, opts.args, os.Environ())
}

// runAudited runs what execOrFail would exec as a child instead, to record
// its run in the audit log l once it has ended. As system(3) does, boxsh
// ignores the terminal's SIGINT and SIGQUIT meanwhile (they reach the
// child, in the same process group) and passes SIGTERM and SIGHUP on. It
// returns the child's exit status, 128+N after a death by signal N.
func runAudited(l *audit.Log, log hclog.Logger, path string, argv, env []string) int {
	cmd := exec.Command(path)
	cmd.Args, cmd.Env = argv, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "boxsh: %s: %v\n", path, err)
		code := 126
		if errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		auditShell(l, log, argv, began, code)
		return code
	}
	waited := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig)
			case <-waited:
				return
			}
		}
	}()
	_ = cmd.Wait()
	close(waited)
	code := proc.ExitStatus(cmd.ProcessState)
	auditShell(l, log, argv, began, code)
	return code
}

// execOrFail replaces the process; it returns only on failure.
func execOrFail(path string, argv, env []string) int {
	err := syscall.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "boxsh: exec %s: %v\n", path, err)
	if os.IsNotExist(err) {
		return 127
	}
	return 126
}

// prompt is the PS1 of interactive shells: "[boxsh] user@host:dir$ ".
func prompt(try bool) string {
	user := os.Getenv("USER")
	if user == "" {
		user = "user"
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	tag := "[boxsh] "
	if try {
		tag = "[boxsh:try] "
	}
	dir := `$(case "$PWD" in "$HOME") echo '~';; "$HOME"/*) echo "~${PWD#"$HOME"}";; *) echo "$PWD";; esac)`
	return tag + user + "@" + host + ":" + dir + "$ "
}
