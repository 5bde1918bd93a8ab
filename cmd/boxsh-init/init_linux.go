package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

// runExec runs argv (boxsh-init --exec -- CMD ARGS...: the shell of shell
// mode, or the command after --, in the sandbox) as the child of a minimal
// init, and returns its exit status as a shell reports it. The command
// gets its own process group, in the foreground of the terminal when
// there is one, so that the terminal's signals reach it and not init.
func runExec(argv []string) int {
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "boxsh-init: --exec needs a command")
		return 2
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh: %s: %v\n", argv[0], err)
		return 127
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if term.IsTerminal(0) {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = 0
	}
	return supervise(cmd, argv[0])
}

// supervise starts cmd, passes the signals init receives on to it, reaps
// every child (orphans included) and returns cmd's exit status: its code,
// or 128+N after a death by signal N.
func supervise(cmd *exec.Cmd, what string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGCHLD)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: start %s: %v\n", what, err)
		if os.IsNotExist(err) {
			return 127
		}
		return 126
	}
	child := cmd.Process.Pid
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			_ = syscall.Kill(child, sig.(syscall.Signal))
			continue
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			if pid == child {
				if ws.Signaled() {
					return 128 + int(ws.Signal())
				}
				return ws.ExitStatus()
			}
		}
	}
	return 1
}
