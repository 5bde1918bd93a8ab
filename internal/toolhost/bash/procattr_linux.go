package bash

import "syscall"

// procAttr puts a shell in its own process group and kills it if
// boxsh-init dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
