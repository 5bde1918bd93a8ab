package host

import (
	"testing"

	"github.com/boxsh/boxsh/runtime/plan"
	"github.com/stretchr/testify/assert"
)

// A rule libseccomp cannot express is a gap only when the kernel has the
// call; the check is what makes a sandbox refuse to start then.
func TestSeccompGaps(t *testing.T) {
	names := []string{"ptrace", "fchmodat2", "openat2", "fchmodat2"}
	oldLib := func(n string) bool { return n != "fchmodat2" && n != "openat2" }
	assert.Equal(t, []string{"fchmodat2", "openat2"}, seccompGaps(names, oldLib, func(string) bool { return true }))
	assert.Empty(t, seccompGaps(names, oldLib, func(string) bool { return false }), "an older kernel lacks them too")
	assert.Empty(t, seccompGaps(names, func(string) bool { return true }, func(string) bool { return true }))

	// The kernel probe: every name of the table is in the filter, and a
	// kernel of 5.6 or later has all of them but fchmodat2 (6.6); an old
	// name is never a gap.
	inFilter := map[string]bool{}
	for _, r := range plan.DefaultSeccomp().Syscalls {
		for _, n := range r.Names {
			inFilter[n] = true
		}
	}
	for name := range newSyscalls {
		assert.True(t, inFilter[name], name)
		if name != "fchmodat2" {
			assert.True(t, kernelHasSyscall(name), name)
		}
	}
	assert.False(t, kernelHasSyscall("ptrace"))
	assert.NoError(t, checkSeccompCovered(nil))
}
