//go:build !linux

package session

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirRef is a directory being walked.
type dirRef struct {
	path string
	fd   int
}

func openDirRef(path string) dirRef { return dirRef{path: path, fd: -1} }

func closeDirRef(dirRef) {}

// lstatIn is os.Lstat of d's entry name.
func lstatIn(d dirRef, name string) (fs.FileInfo, error) {
	return os.Lstat(filepath.Join(d.path, name))
}

// openIn opens d's entry name for reading, not following a link.
func openIn(d dirRef, name string) (int, error) {
	return unix.Open(filepath.Join(d.path, name), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
}
