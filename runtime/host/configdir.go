package host

import (
	"path/filepath"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// configHidden refuses a sandbox that could write the user's boxsh
// configuration directory dir (policy.ConfigDir).
//
// The global settings file and the trust store there decide what later
// sandboxes may do. So a command that wrote them could widen its own future
// policy. dir is writable when the most specific bind that shows it is a wr
// bind or a cow destination, unless the protected paths (protect) keep it, or
// both of its files, read-only.
func configHidden(sb policy.Sandbox, protect []plan.HostPath, dir string) error {
	via := plan.BindShowing(sb, dir)
	if via == nil || via.Mode == policy.ReadOnly {
		return nil
	}
	if via.Mode == policy.ReadWrite && protects(protect, dir) {
		return nil
	}
	return policy.BindErrorf("%s would let the sandbox write boxsh's own settings in %s (the global policy and the trusted settings files): bind a directory that does not hold it, or bind it ro: too", bindFlag(sb, *via), dir)
}

// protects tells whether the protected paths keep dir read-only: a
// protected directory holds it, or its two files are protected.
func protects(protect []plan.HostPath, dir string) bool {
	covered := func(p string) bool {
		for _, hp := range protect {
			if hp.Path == p || hp.Dir && pathtree.Within(p, hp.Path) {
				return true
			}
		}
		return false
	}
	return covered(dir) || covered(filepath.Join(dir, "policy.json")) && covered(filepath.Join(dir, "trusted.json"))
}

// checkConfigHidden is configHidden for the caller's configuration
// directory, home's unless XDG_CONFIG_HOME says otherwise: StartContainer
// and boxsh spec refuse such a sandbox.
func checkConfigHidden(sb policy.Sandbox, protect []plan.HostPath, home string) error {
	if !filepath.IsAbs(home) {
		return nil
	}
	return configHidden(sb, protect, policy.ConfigDir(home))
}
