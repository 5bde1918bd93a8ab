package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// childEnv marks the copy of boxsh-init that PID 1 starts.
const childEnv = "BOXSH_INIT_CHILD"

// runAsInit handles being PID 1 of a PID namespace: boxsh-init then starts
// itself again as its only child (which does the work) and stays behind as
// a minimal init that reaps every orphan and passes signals on, in the
// manner of tini. The worker processes wait for their own children, so no
// exit status is ever taken from them. It reports false when not PID 1.
func runAsInit() (int, bool) {
	if os.Getpid() != 1 || os.Getenv(childEnv) != "" {
		return 0, false
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{os.NewFile(3, "frames")}
	cmd.Env = append(os.Environ(), childEnv+"=1")
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: start worker: %v\n", err)
		return 1, true
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
					return 128 + int(ws.Signal()), true
				}
				return ws.ExitStatus(), true
			}
		}
	}
	return 1, true
}
