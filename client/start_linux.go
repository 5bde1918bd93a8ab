package client

import (
	"os/exec"
	"syscall"

	"github.com/boxsh/boxsh/internal/forkthread"
)

// startCmd starts the server so that the kernel kills it (SIGKILL) when the
// program that started it dies, however it dies, kill -9 included.
//
// So a sandbox and the commands in flight die with their owner. (v3's end of
// input still ends a server whose owner closes its stdin and lives on.)
//
// The parent-death signal fires when the thread that forked the server exits,
// not the process. A Go thread exits when a goroutine locked to it
// (runtime.LockOSThread) returns without unlocking, and any goroutine may lock
// whichever thread it runs on. So every server is forked from one thread
// locked for the life of the program, which therefore dies only with it. (A
// lifeline pipe whose end the kernel closes would need the server to watch it;
// the signal needs nothing of the server.)
func startCmd(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return forkthread.Run(cmd.Start)
}
