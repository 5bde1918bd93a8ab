//go:build !linux && !darwin

package runtime

import (
	"context"
	"errors"
)

// SandboxSupported tells whether this binary can start sandboxes.
func SandboxSupported() error {
	return errors.New("--sandbox is not supported on this system yet")
}

func startSandboxed(ctx context.Context, cfg Config) (*Instance, error) {
	return nil, SandboxSupported()
}

// startReaper does nothing: there is no sandbox here.
func startReaper(Config) {}
