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
