//go:build !linux

package bash

import (
	"errors"
	"os"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/toolhost/reap"
)

// zygote is Linux's fork server (zygote_linux.go); elsewhere shells start
// by exec.
type zygote struct{}

// cloneError is Linux's (zygote_linux.go).
type cloneError struct{ error }

func startZygote(lib, shell string, limits proc.Limits, env []string, dir string, devNull *os.File, reaper *reap.Reaper) (*zygote, error) {
	return nil, errors.ErrUnsupported
}

func (z *zygote) spawnEach(stdin *os.File, shells []*shell, done func(*shell, *child, error)) error {
	return errors.ErrUnsupported
}

func (z *zygote) close() {}
