package proc

import (
	"os"
	"syscall"
)

// SignalStatus is the exit status a shell reports for a process killed by
// sig: 128+N.
func SignalStatus(sig syscall.Signal) int { return 128 + int(sig) }

// WaitStatus is the exit status a shell reports for a process that ended
// with ws: its exit code, or 128+N after a death by signal N.
func WaitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return SignalStatus(ws.Signal())
	}
	return ws.ExitStatus()
}

// ExitStatus is WaitStatus for a process state; -1 when there is none.
func ExitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		return WaitStatus(ws)
	}
	return ps.ExitCode()
}
