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

// holdInode is Linux's O_PATH hold; elsewhere a replaced file is freed at
// its rename.
func holdInode(string) (release func()) { return func() {} }

// writeOut writes data to the new file f.
func writeOut(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}
