//go:build !linux && !darwin

package client

import (
	"fmt"
	"runtime"
)

// Supported tells whether this machine can run boxsh's sandbox: only
// Linux and macOS can.
func Supported() error {
	return fmt.Errorf("boxsh's sandbox runs on Linux and macOS, not %s", runtime.GOOS)
}
