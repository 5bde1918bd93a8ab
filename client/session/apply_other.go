//go:build !linux

package session

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// errApplyUnsupported: applying needs Linux's openat2.
var errApplyUnsupported = errors.New("applying a session needs Linux")

type treeFS struct{}

func openTree(src, dst string) (*treeFS, error) { return nil, errApplyUnsupported }
func (t *treeFS) close()                        {}
func (t *treeFS) copyFile(string, uint32) error { return errApplyUnsupported }
func (t *treeFS) copySymlink(string) error      { return errApplyUnsupported }
func (t *treeFS) mkdir(string) error            { return errApplyUnsupported }
func (t *treeFS) chmod(string, uint32) error    { return errApplyUnsupported }
func (t *treeFS) remove(string) error           { return errApplyUnsupported }
func lockFile(string) (func(), error)           { return func() {}, nil }

// errTooLarge is the error of readNoFollow for a file over its limit.
var errTooLarge = errors.New("file too large")

// readlinkNoFollow is the target of the symbolic link rel below root.
func readlinkNoFollow(root, rel string) (string, error) {
	return os.Readlink(filepath.Join(root, filepath.FromSlash(rel)))
}

// readNoFollow reads the regular file rel below root (its last component
// not followed), up to max bytes.
func readNoFollow(root, rel string, max int64) ([]byte, error) {
	p := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New(rel + ": not a regular file")
	}
	if fi.Size() > max {
		return nil, errTooLarge
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max+1))
}
