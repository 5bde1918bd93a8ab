package client

import (
	"fmt"
	"os"
)

// Supported tells whether this machine can run boxsh's sandbox, and if
// not, why: on macOS it needs /usr/bin/sandbox-exec.
func Supported() error {
	if _, err := os.Stat("/usr/bin/sandbox-exec"); err != nil {
		return fmt.Errorf("the macOS sandbox needs /usr/bin/sandbox-exec: %w", err)
	}
	return nil
}
