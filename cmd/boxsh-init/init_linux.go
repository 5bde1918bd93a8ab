package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/starttrace"
)

// runExec runs argv as the child of a minimal init, and returns its exit
// status as a shell reports it.
//
// argv comes from boxsh-init --exec -- CMD ARGS...: the shell of shell mode,
// or the command after --, in the sandbox. The command gets its own process
// group, in the foreground of the terminal when there is one, so that the
// terminal's signals reach it and not init.
//
// With --lifeline FD, FD is the read end of a pipe whose write end only the
// front holds. When it reads end of file, the front is gone, however it ended.
// runExec then exits at once, which ends the sandbox, since runExec is PID 1.
func runExec(args []string) int {
	o, err := initproto.ParseInitOptions(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: %v\n", err)
		return 2
	}
	argv := o.Command
	if o.Lifeline > 0 {
		watchLifeline(o.Lifeline)
	}
	if o.ProxyFD > 0 {
		// As with --rpc: without the proxy (a spec run by another
		// runtime, which gives no fd 4), the command runs with no way
		// out, since its network namespace holds only loopback. boxsh
		// itself always passes the socket.
		session, err := serveProxy(context.Background(), o.ProxyFD, o.ProxyListen)
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "boxsh-init: no network proxy: %v\n", err)
		case len(o.EgressPorts) > 0:
			if err := serveEgress(context.Background(), session, o.EgressPorts); err != nil {
				fmt.Fprintf(os.Stderr, "boxsh-init: no capture of connections: %v\n", err)
			}
		}
	}
	if o.ForwardFD > 0 {
		if err := serveForward(context.Background(), o.ForwardFD); err != nil {
			fmt.Fprintf(os.Stderr, "boxsh-init: no port forwarding: %v\n", err)
		}
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
	// The foreground of the terminal, when stdin is the controlling
	// terminal (the sandbox's own one); a terminal passed through as
	// stdin is not (boxsh --sandbox -c CMD > file typed at a terminal).
	if _, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err == nil {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = 0
	}
	code := supervise(cmd, argv[0])
	starttrace.Mark("init.cmd-done")
	return code
}

// watchLifeline exits the process when the pipe fd reads end of file.
func watchLifeline(fd int) {
	syscall.CloseOnExec(fd) // not for the command
	f := os.NewFile(uintptr(fd), "lifeline")
	go func() {
		_, _ = io.Copy(io.Discard, f)
		os.Exit(proc.SignalStatus(syscall.SIGKILL))
	}()
}

// harden makes boxsh-init non-dumpable.
//
// The commands it runs (same user, no CAP_SYS_PTRACE) can then neither trace
// it nor take its descriptors (pidfd_getfd). They can neither read nor write
// its memory, nor open its /proc files beyond the basic ones.
func harden() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// supervise starts cmd, passes the signals init receives on to it, and reaps
// every child, orphans included.
//
// It returns cmd's exit status: its code, or 128+N after a death by signal N.
func supervise(cmd *exec.Cmd, what string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGCHLD)
	starttrace.Mark("init.cmd")
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
			// The command's process group: a shell's foreground job
			// gets it too, as from a terminal.
			_ = syscall.Kill(-child, sig.(syscall.Signal))
			continue
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			if pid == child {
				return proc.WaitStatus(ws)
			}
		}
	}
	return 1
}
