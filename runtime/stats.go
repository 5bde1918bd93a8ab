package runtime

import (
	"context"
	"os"
	"time"

	"github.com/boxsh/boxsh/internal/front/usage"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

func init() {
	tool.Handle(frontTools, tool.SandboxStatsDef, func(_ context.Context, s *Supervisor, _ tool.NoArgs) (tool.Result, error) {
		return tool.StructuredResult(s.Stats()), nil
	})
}

// Stats measures the sandbox from outside, for the sandbox_stats tool.
//
// None of it is read from anything the sandbox answers. It reads:
//
//   - the processes, from the sandbox's cgroup when it has one, else from
//     /proc. In a sandbox those are boxsh-init and its descendants, which its
//     PID namespace keeps together. In plain mode they are the front's
//     descendants: boxsh-init's tree and what it left, which the front adopts.
//   - the writable layers of the copy-on-write binds on the host;
//   - the bytes that the front's proxy counted since the supervisor started,
//     and the latest destinations it refused;
//   - the running boxsh-init's uptime.
func (s *Supervisor) Stats() tool.StatsOutput {
	s.mu.Lock()
	in := s.current
	s.mu.Unlock()
	out := tool.StatsOutput{Source: tool.StatsNone, Sandboxed: s.cfg.Sandbox.Enabled, DiskDirs: []string{}}
	if in != nil {
		out.UptimeSeconds = time.Since(in.started).Seconds()
		u, source := in.usage(s.cfg.Sandbox.Enabled)
		out.Source = source
		out.CPUUserSeconds, out.CPUSystemSeconds = u.User.Seconds(), u.System.Seconds()
		out.MemoryBytes, out.Processes = u.Memory, u.Processes
	}
	for _, b := range s.cfg.Sandbox.Binds {
		if !s.cfg.Sandbox.Enabled || b.Mode != policy.CopyOnWrite {
			continue
		}
		upper, _ := plan.CowDirs(b)
		out.DiskDirs = append(out.DiskDirs, upper)
		n, truncated, err := statsDiskWalk.Size(upper)
		if err != nil {
			s.cfg.Log.Debug("sandbox_stats: a copy-on-write layer", "dir", upper, "error", err)
			continue
		}
		out.DiskBytes += n
		out.DiskTruncated = out.DiskTruncated || truncated
	}
	if t := s.cfg.Proxy.Traffic; t != nil {
		out.ProxyBytesOut, out.ProxyBytesIn = t.Out.Load(), t.In.Load()
	}
	out.NetworkRefusals = s.refusals.stats()
	out.SecretUses = s.uses.stats()
	return out
}

// statsDiskWalk measures each copy-on-write layer for Stats.
var statsDiskWalk = usage.DiskWalk{MaxEntries: tool.StatsMaxDiskEntries, MaxDepth: tool.StatsMaxDiskDepth}

// usage measures the processes of boxsh-init in, and says from where.
func (in *Instance) usage(sandboxed bool) (usage.Usage, string) {
	if in.cgroup != "" {
		if u, err := usage.Cgroup(in.cgroup); err == nil {
			return u, tool.StatsCgroup
		}
	}
	root, withRoot := in.pid, true
	if !sandboxed {
		root, withRoot = os.Getpid(), false
	}
	u, err := usage.Tree("/proc", root, withRoot)
	if err != nil {
		return usage.Usage{}, tool.StatsNone
	}
	return u, tool.StatsProc
}
