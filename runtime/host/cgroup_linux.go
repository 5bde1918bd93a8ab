package host

import (
	"os"

	"github.com/boxsh/boxsh/internal/front/hostcheck"
)

// SandboxCgroup says whether a sandbox gets a cgroup of its own, and under
// which parent cgroup.
//
// A sandbox gets one only as the real root with a writable cgroup file system,
// where libcontainer makes it. Others cannot:
//
//   - uid 0 in a container's user namespace (rootless Podman, a pod with a
//     user namespace) is an ordinary user of the host;
//   - root in a container whose cgroup file system is read-only (Docker);
//   - a rootless sandbox. A user's delegated cgroup v2 subtree (which systemd
//     gives with Delegate=yes) holds the user's own processes, and cgroup v2
//     lets only a cgroup without processes pass controllers down. Using it
//     would mean moving boxsh into a cgroup of its own first.
//
// Where there is no cgroup, the rlimits stand in (see plan.Limits).
func SandboxCgroup() (parent string, ok bool) {
	if hostcheck.SandboxCgroup() {
		return "/boxsh", true
	}
	return "", false
}

// rootlessCgroups tells libcontainer to make the sandbox's cgroup where it
// can, and go without where it cannot (a permission error).
//
// It does so for any user but the real root with a writable cgroup file
// system.
func rootlessCgroups() bool { return !hostcheck.SandboxCgroup() }

// rootlessEUID tells libcontainer to start the sandbox as a user without
// privileges.
//
// It does so for any user but root with CAP_SYS_ADMIN. Root in a container
// without it (Docker's and a pod's defaults) cannot join the sandbox's mount
// namespace to prepare its mounts, as libcontainer does for root.
func rootlessEUID() bool { return os.Geteuid() != 0 || !hostcheck.CapSysAdmin() }
