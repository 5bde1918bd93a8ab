package host

import "os"

// SandboxCgroup says whether a sandbox gets a cgroup of its own, and
// under which parent cgroup: as root, where libcontainer makes one. A
// rootless sandbox has none: a user's delegated cgroup v2 subtree (which
// systemd gives with Delegate=yes) holds the user's own processes, and
// cgroup v2 lets only a cgroup without processes pass controllers down,
// so using it would mean moving boxsh into a cgroup of its own first;
// the rlimits stand in (see Limits).
func SandboxCgroup() (parent string, ok bool) {
	if os.Geteuid() == 0 {
		return "/boxsh", true
	}
	return "", false
}
