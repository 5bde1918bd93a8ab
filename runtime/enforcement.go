package runtime

import (
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/host"
)

// Enforcement says whether and how each limit that p sets is enforced.
//
// boxsh policy show and the start-up log print it.
func Enforcement(p policy.Policy, sandbox bool) map[string]string {
	_, cgroup := host.SandboxCgroup()
	cgroup = cgroup && sandbox
	how := map[string]string{}
	if p.TimeoutDefault.Set() {
		how["timeoutDefault"] = "enforced: bash calls that give no timeout"
	}
	if p.MaxOutput.Set() {
		how["maxOutput"] = "enforced: each output stream of a bash call"
	}
	if p.Memory.Set() {
		how["memory"] = "enforced per process of each command: rlimit RLIMIT_DATA (no cgroup for a rootless sandbox)"
	}
	if p.Pids.Set() {
		how["pids"] = "not enforced without --sandbox (the kernel would count all of the user's processes)"
		if sandbox {
			how["pids"] = "enforced on each command: rlimit RLIMIT_NPROC, counted in the sandbox's user namespace"
		}
	}
	if p.CPUs.Set() {
		how["cpus"] = "not enforced: needs the sandbox's own cgroup, which only a sandbox of root gets"
	}
	if cgroup {
		if p.CPUs.Set() {
			how["cpus"] = "enforced: the sandbox's cgroup (cpu.max)"
		}
		if p.Memory.Set() {
			how["memory"] += "; and for the whole sandbox: its cgroup (memory.max)"
		}
		if p.Pids.Set() {
			how["pids"] += "; and its cgroup (pids.max)"
		}
	}
	return how
}
