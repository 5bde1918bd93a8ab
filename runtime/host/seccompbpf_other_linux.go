//go:build !cgo || !seccomp

package host

import (
	"errors"

	"github.com/opencontainers/runc/libcontainer/configs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// seccompProgram needs libseccomp; without it there is no sandbox anyway
// (see SandboxSupported).
type seccompProgram struct{}

func startSeccomp(*specs.LinuxSeccomp, []specs.LinuxSeccompFlag) *seccompProgram {
	return &seccompProgram{}
}

func (*seccompProgram) program(*configs.Seccomp) ([]byte, error) {
	return nil, errors.New("no libseccomp")
}
