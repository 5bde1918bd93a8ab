package plan

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/policy"
)

// Rlimit is a soft and hard resource limit.
type Rlimit struct {
	Soft, Hard uint64
}

// Limits are the resource limits a sandbox's spec sets as rlimits, which every
// process of the sandbox inherits.
//
// A rootless runtime has no cgroup to use. The spec carries every rlimit the
// sandbox's first process gets, so that another runtime gives the same instead
// of its own.
//
// Memory and Pids are for a shell or command run with --exec. With --rpc,
// boxsh-init applies them to each command it starts instead
// (initproto.InitOptions), so that they do not bind boxsh-init itself: a fork
// bomb that takes every process slot must not keep it from making a thread.
type Limits struct {
	// NoFile is the limit of open files (RLIMIT_NOFILE) of every process,
	// boxsh-init included: HostFacts.NoFile. nil leaves it to the
	// runtime.
	NoFile *Rlimit
	// Memory caps each process's data (heap and private mappings,
	// RLIMIT_DATA), in bytes; 0 is no limit.
	Memory int64
	// Pids caps the processes of the sandbox (RLIMIT_NPROC); 0 is no
	// limit. The kernel counts RLIMIT_NPROC per user namespace, so only
	// the sandbox's own processes count, boxsh-init and the warm shells of
	// its workers among them.
	Pids int
	// Cgroup also caps the whole sandbox, when the runtime can have a
	// cgroup: as root, or with a delegated cgroup v2 subtree. It sets
	// Cgroup.Memory bytes (memory.max), Cgroup.Pids tasks (pids.max) and
	// Cgroup.CPUs cores (cpu.max).
	Cgroup *CgroupLimits
}

// CgroupLimits are the limits of a sandbox's cgroup (see Limits.Cgroup).
type CgroupLimits struct {
	Memory int64
	Pids   int
	CPUs   float64
}

// cpuPeriod is the period of the sandbox's CPU quota, in microseconds.
const cpuPeriod = 100_000

// resources are the cgroup limits of l, or nil.
func (l Limits) resources() *specs.LinuxResources {
	c := l.Cgroup
	if c == nil || c.Memory <= 0 && c.Pids <= 0 && c.CPUs <= 0 {
		return nil
	}
	r := &specs.LinuxResources{}
	if c.Memory > 0 {
		m := c.Memory
		r.Memory = &specs.LinuxMemory{Limit: &m}
	}
	if c.Pids > 0 {
		pids := int64(c.Pids)
		r.Pids = &specs.LinuxPids{Limit: &pids}
	}
	if c.CPUs > 0 {
		quota, period := int64(c.CPUs*cpuPeriod), uint64(cpuPeriod)
		r.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	return r
}

// limitsOf are the limits of the policy p that a sandbox's spec sets: all
// of them for a shell or command, none for boxsh-init (see Limits).
func limitsOf(p policy.Policy, forInit bool) Limits {
	var l Limits
	if !forInit {
		l = Limits{Memory: p.Memory.Value, Pids: p.Pids.Value}
	}
	if p.Memory.Set() || p.Pids.Set() || p.CPUs.Set() {
		l.Cgroup = &CgroupLimits{Memory: p.Memory.Value, Pids: p.Pids.Value, CPUs: p.CPUs.Value}
	}
	return l
}

// rlimits are the spec's process.rlimits of l; host.StartContainer applies
// exactly these.
func (l Limits) rlimits() []specs.POSIXRlimit {
	var rs []specs.POSIXRlimit
	if l.NoFile != nil {
		rs = append(rs, specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: l.NoFile.Hard, Soft: l.NoFile.Soft})
	}
	if l.Memory > 0 {
		rs = append(rs, specs.POSIXRlimit{Type: "RLIMIT_DATA", Hard: uint64(l.Memory), Soft: uint64(l.Memory)})
	}
	if l.Pids > 0 {
		rs = append(rs, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: uint64(l.Pids), Soft: uint64(l.Pids)})
	}
	return rs
}
