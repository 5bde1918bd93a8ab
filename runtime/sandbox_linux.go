package runtime

import (
	"context"
	"errors"
)

// startSandboxed starts boxsh-init inside the sandbox.
func startSandboxed(ctx context.Context, cfg Config) (*Instance, error) {
	return nil, errors.New("--sandbox is not implemented yet")
}
