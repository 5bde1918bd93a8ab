//go:build !linux

package host

import (
	"errors"
	"time"
)

// Freeze: sandboxes are frozen on Linux only.
func Freeze(int, time.Duration) (func(), error) {
	return nil, errors.New("freezing a sandbox is supported on Linux only")
}

// FreezeCgroup: sandboxes are frozen on Linux only.
func FreezeCgroup(string, time.Duration) (func(), error) {
	return nil, errors.New("freeze: cgroups are Linux's")
}
