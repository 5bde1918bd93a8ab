//go:build !linux

package bash

import "syscall"

// procAttr puts a shell in its own process group.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
