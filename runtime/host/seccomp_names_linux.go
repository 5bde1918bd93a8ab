//go:build cgo && seccomp

package host

import libseccomp "github.com/seccomp/libseccomp-golang"

// libseccompKnows reports whether the linked libseccomp resolves name.
func libseccompKnows(name string) bool {
	_, err := libseccomp.GetSyscallFromName(name)
	return err == nil
}
