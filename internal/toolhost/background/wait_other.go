//go:build !linux

package background

import (
	"os"
	"syscall"
)

// waitProcess waits for p to exit and reaps it.
func waitProcess(p *os.Process) (syscall.WaitStatus, error) {
	st, err := p.Wait()
	if err != nil {
		return 0, err
	}
	return st.Sys().(syscall.WaitStatus), nil
}

// procAttr puts a command in its own process group.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
