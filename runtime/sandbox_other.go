//go:build !linux

package runtime

import (
	"context"
	"errors"
)

func startSandboxed(ctx context.Context, cfg Config) (*Instance, error) {
	return nil, errors.New("--sandbox is not supported on this system yet")
}
