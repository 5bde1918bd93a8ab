package session

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// dirRef is a directory being walked: its path, and a descriptor that
// stats its entries without resolving the whole path again (-1: none).
type dirRef struct {
	path string
	fd   int
}

// openDirRef opens the directory path for lstatIn; close it with
// closeDirRef. A directory that cannot be opened is used by path.
func openDirRef(path string) dirRef {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		fd = -1
	}
	return dirRef{path: path, fd: fd}
}

func closeDirRef(d dirRef) {
	if d.fd >= 0 {
		syscall.Close(d.fd)
	}
}

// lstatIn is os.Lstat of d's entry name.
func lstatIn(d dirRef, name string) (fs.FileInfo, error) {
	if d.fd < 0 {
		return os.Lstat(filepath.Join(d.path, name))
	}
	fi := &statInfo{name: name}
	for {
		err := unix.Fstatat(d.fd, name, &fi.st, unix.AT_SYMLINK_NOFOLLOW)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: filepath.Join(d.path, name), Err: err}
		}
		return fi, nil
	}
}

// statInfo is the fs.FileInfo of a stat, as os.Lstat makes it.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (f *statInfo) Name() string       { return f.name }
func (f *statInfo) Size() int64        { return f.st.Size }
func (f *statInfo) ModTime() time.Time { return time.Unix(f.st.Mtim.Unix()) }
func (f *statInfo) IsDir() bool        { return f.Mode().IsDir() }
func (f *statInfo) Sys() any           { return &f.st }

func (f *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(f.st.Mode & 0o777)
	switch f.st.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if f.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if f.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if f.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// openIn opens d's entry name for reading, not following a link.
func openIn(d dirRef, name string) (int, error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK
	if d.fd < 0 {
		return unix.Open(filepath.Join(d.path, name), flags, 0)
	}
	return unix.Openat(d.fd, name, flags, 0)
}
