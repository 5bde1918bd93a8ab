package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/term"
)

// runShell replaces boxsh with the shell, so that exit status, signals,
// stdio and the terminal are the shell's own.
func runShell(opts options, log hclog.Logger) int {
	if opts.sandbox.Enabled || opts.sandbox.Try {
		return runSandboxedShell(opts, log)
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
	return execOrFail(opts.shell, argv, env)
}

// runCommand runs the command after "--".
func runCommand(opts options, log hclog.Logger) int {
	if opts.sandbox.Enabled {
		return runSandboxedShell(opts, log)
	}
	path, err := exec.LookPath(opts.args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh: %s: %v\n", opts.args[0], err)
		return 127
	}
	return execOrFail(path, opts.args, os.Environ())
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
