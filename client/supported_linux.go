package client

import (
	"errors"

	"github.com/boxsh/boxsh/internal/front/hostcheck"
)

// Supported tells whether this machine can run boxsh's sandbox, and if not,
// why and what to change.
//
// The error is one line: the first failing check of those boxsh doctor prints.
// They cover user namespaces, AppArmor's restriction of them, a container's
// seccomp profile or masked /proc, cgroups, and overlayfs for copy-on-write
// binds.
func Supported() error {
	if p := hostcheck.Problem(hostcheck.All()); p != "" {
		return errors.New(p)
	}
	return nil
}
