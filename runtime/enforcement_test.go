package runtime

import (
	"testing"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/host"
	"github.com/stretchr/testify/assert"
)

func TestEnforcement(t *testing.T) {
	p := policy.Policy{
		Memory: policy.Value[int64]{Value: 1 << 30, Source: "f"},
		Pids:   policy.Value[int]{Value: 64, Source: "f"},
		CPUs:   policy.Value[float64]{Value: 2, Source: "f"},
	}
	how := Enforcement(p, true)
	assert.Contains(t, how["memory"], "RLIMIT_DATA")
	assert.Contains(t, how["pids"], "RLIMIT_NPROC")
	if _, cgroup := host.SandboxCgroup(); cgroup {
		assert.Contains(t, how["cpus"], "cpu.max")
	} else {
		assert.Contains(t, how["cpus"], "not enforced")
	}
	how = Enforcement(p, false)
	assert.Contains(t, how["pids"], "not enforced without --sandbox")
	assert.Contains(t, how["cpus"], "not enforced")
	assert.NotContains(t, how, "timeoutDefault", "only the limits that are set")
}
