//go:build !cgo || !seccomp

package host

import (
	"errors"

	"github.com/opencontainers/runc/libcontainer/configs"
)

// preparedSeccomp needs libseccomp; without it there is no sandbox anyway
// (see SandboxSupported).
func preparedSeccomp(string, *configs.Seccomp) ([]byte, error) {
	return nil, errors.New("no libseccomp")
}
