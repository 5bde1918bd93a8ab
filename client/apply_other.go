//go:build !linux

package client

import (
	"errors"
	"io/fs"
)

// errApplyUnsupported: applying needs Linux's openat2.
var errApplyUnsupported = errors.New("applying a session needs Linux")

type treeFS struct{}

func openTree(src, dst string) (*treeFS, error)   { return nil, errApplyUnsupported }
func (t *treeFS) close()                          {}
func (t *treeFS) copyFile(string) error           { return errApplyUnsupported }
func (t *treeFS) copySymlink(string) error        { return errApplyUnsupported }
func (t *treeFS) mkdir(string) error              { return errApplyUnsupported }
func (t *treeFS) chmod(string, fs.FileMode) error { return errApplyUnsupported }
func (t *treeFS) remove(string) error             { return errApplyUnsupported }
func lockFile(string) (func(), error)             { return func() {}, nil }
