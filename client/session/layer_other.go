//go:build !linux

package session

import (
	"fmt"
	goruntime "runtime"
)

// copyTree: layers are overlay upper directories, which Linux only has.
func copyTree(src, dst string, into bool) error {
	return fmt.Errorf("layers are copied on Linux only, not on %s", goruntime.GOOS)
}
