//go:build !linux

package files

import (
	"errors"
	"os"
)

// createUnnamed is Linux's O_TMPFILE; elsewhere temporary files are named.
func createUnnamed(string) (*os.File, error) { return nil, errors.ErrUnsupported }

// linkUnnamed is never called where createUnnamed fails.
func linkUnnamed(*os.File, string) error { return errors.ErrUnsupported }
