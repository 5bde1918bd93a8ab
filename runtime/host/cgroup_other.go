//go:build !linux

package host

// SandboxCgroup says whether a sandbox can have a cgroup of its own: only
// on Linux.
func SandboxCgroup() (parent string, ok bool) { return "", false }
