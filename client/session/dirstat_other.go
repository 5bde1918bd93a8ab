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

// openDirIn names the directory name of d.
func openDirIn(d dirRef, name string) (dirRef, error) {
	if d.path != "" {
		name = filepath.Join(d.path, name)
	}
	return dirRef{path: name, fd: -1}, nil
}

// entry is the path of d's entry name.
func (d dirRef) entry(name string) string { return filepath.Join(d.path, name) }

// readNamesIn lists the names of the directory d.
func readNamesIn(d dirRef) ([]string, error) {
	f, err := os.Open(d.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// readlinkIn is the target of d's symbolic link name.
func readlinkIn(d dirRef, name string) (string, error) {
	return os.Readlink(filepath.Join(d.path, name))
}

func closeDirRef(dirRef) {}

// lstatIn is os.Lstat of d's entry name.
func lstatIn(d dirRef, name string) (fs.FileInfo, error) {
	return os.Lstat(filepath.Join(d.path, name))
}

// openIn opens d's entry name for reading, not following a link.
func openIn(d dirRef, name string) (int, error) {
	return unix.Open(filepath.Join(d.path, name), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
}
