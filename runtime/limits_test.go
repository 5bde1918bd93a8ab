package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

func TestLimitsResources(t *testing.T) {
	assert.Nil(t, Limits{Memory: 1 << 20}.resources(), "no cgroup")
	assert.Nil(t, Limits{Cgroup: &CgroupLimits{}}.resources(), "nothing to limit")
	r := Limits{Cgroup: &CgroupLimits{Memory: 1 << 30, Pids: 64, CPUs: 1.5}}.resources()
	require.NotNil(t, r)
	assert.Equal(t, int64(1<<30), *r.Memory.Limit)
	assert.Equal(t, int64(64), *r.Pids.Limit)
	assert.Equal(t, int64(150_000), *r.CPU.Quota)
	assert.Equal(t, uint64(100_000), *r.CPU.Period)
}

func TestEnforcement(t *testing.T) {
	p := policy.Policy{
		Memory: policy.Value[int64]{Value: 1 << 30, Source: "f"},
		Pids:   policy.Value[int]{Value: 64, Source: "f"},
		CPUs:   policy.Value[float64]{Value: 2, Source: "f"},
	}
	how := Enforcement(p, true)
	assert.Contains(t, how["memory"], "RLIMIT_DATA")
	assert.Contains(t, how["pids"], "RLIMIT_NPROC")
	if _, cgroup := SandboxCgroup(); cgroup {
		assert.Contains(t, how["cpus"], "cpu.max")
	} else {
		assert.Contains(t, how["cpus"], "not enforced")
	}
	how = Enforcement(p, false)
	assert.Contains(t, how["pids"], "not enforced without --sandbox")
	assert.Contains(t, how["cpus"], "not enforced")
	assert.NotContains(t, how, "timeoutDefault", "only the limits that are set")
}
