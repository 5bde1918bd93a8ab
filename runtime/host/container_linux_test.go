package host

import (
	"testing"

	"github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/policy"
)

// TestSandboxSupported checks that a build without seccomp support says
// so (go test builds without the seccomp tag; just build with it).
func TestSandboxSupported(t *testing.T) {
	if seccomp.Enabled {
		assert.NoError(t, SandboxSupported())
		return
	}
	assert.ErrorContains(t, SandboxSupported(), "seccomp support")
}

func TestStateHidden(t *testing.T) {
	root := "/run/user/1000/boxsh"
	for _, b := range []policy.Bind{
		{Mode: policy.ReadWrite, Src: "/run/user/1000", Dst: "/run/user/1000"},
		{Mode: policy.ReadWrite, Src: root + "/sb-x", Dst: root + "/sb-x"},
		{Mode: policy.CopyOnWrite, Src: "/src", Dst: "/run"},
	} {
		assert.ErrorContains(t, stateHidden(policy.Sandbox{Binds: []policy.Bind{b}}, root), "state directory", b.String())
	}
	assert.NoError(t, stateHidden(policy.Sandbox{Binds: []policy.Bind{
		{Mode: policy.ReadOnly, Src: "/run/user/1000", Dst: "/run/user/1000"},
		{Mode: policy.ReadWrite, Src: "/home/u", Dst: "/home/u"},
	}}, root))
}
