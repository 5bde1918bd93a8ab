package host

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

func TestConfigHidden(t *testing.T) {
	const dir = "/home/u/.config/boxsh"
	bind := func(mode policy.BindMode, p string) policy.Bind { return policy.Bind{Mode: mode, Src: p, Dst: p} }
	for _, tc := range []struct {
		name    string
		binds   []policy.Bind
		protect []plan.HostPath
		refused bool
	}{
		{"not bound", []policy.Bind{bind(policy.ReadWrite, "/home/u/proj")}, nil, false},
		{"read-only", []policy.Bind{bind(policy.ReadOnly, "/home/u")}, nil, false},
		{"wr home, unprotected", []policy.Bind{bind(policy.ReadWrite, "/home/u")}, nil, true},
		{"wr of the directory itself", []policy.Bind{bind(policy.ReadWrite, dir)}, nil, true},
		{"wr home, ro config", []policy.Bind{bind(policy.ReadWrite, "/home/u"), bind(policy.ReadOnly, "/home/u/.config")}, nil, false},
		{"wr home, protected directory", []policy.Bind{bind(policy.ReadWrite, "/home/u")}, []plan.HostPath{{Path: "/home/u/.config/boxsh", Dir: true}}, false},
		{"wr home, protected parent", []policy.Bind{bind(policy.ReadWrite, "/home/u")}, []plan.HostPath{{Path: "/home/u/.config", Dir: true}}, false},
		{"wr home, both files protected", []policy.Bind{bind(policy.ReadWrite, "/home/u")}, []plan.HostPath{{Path: dir + "/policy.json"}, {Path: dir + "/trusted.json", Missing: true}}, false},
		{"wr home, only the policy protected", []policy.Bind{bind(policy.ReadWrite, "/home/u")}, []plan.HostPath{{Path: dir + "/policy.json"}}, true},
		{"cow destination", []policy.Bind{{Mode: policy.CopyOnWrite, Src: "/src", Dst: "/home/u"}}, []plan.HostPath{{Path: dir, Dir: true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := configHidden(policy.Sandbox{Enabled: true, Binds: tc.binds}, tc.protect, dir)
			if !tc.refused {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, policy.ErrBind)
			assert.ErrorContains(t, err, "would let the sandbox write boxsh's own settings in "+dir)
		})
	}
}
