package session

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// dirRef is a directory being walked: its path (for messages), and a
// descriptor its entries are resolved beneath (-1: none).
type dirRef struct {
	path string
	fd   int
}

// openDirIn opens the directory name of d (with d's fd -1, the path
// name) beneath it, not following a link; close it with closeDirRef.
func openDirIn(d dirRef, name string) (dirRef, error) {
	at, path := unix.AT_FDCWD, name
	if d.fd >= 0 {
		at, path = d.fd, filepath.Join(d.path, name)
	}
	for {
		fd, err := unix.Openat(at, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err == unix.EINTR {
			continue
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			err = errors.New("replaced by a file or a symbolic link (never followed) while it was read")
		}
		if err != nil {
			return dirRef{fd: -1}, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return dirRef{path: path, fd: fd}, nil
	}
}

func closeDirRef(d dirRef) {
	if d.fd >= 0 {
		syscall.Close(d.fd)
	}
}

// entry returns a path of d's entry name that is resolved through d's
// descriptor (procfs). The entry itself is not followed.
//
// It is for the calls that take only a path, the l*xattr calls.
func (d dirRef) entry(name string) string {
	return "/proc/self/fd/" + strconv.Itoa(d.fd) + "/" + name
}

// readNamesIn lists the names of the directory d.
func readNamesIn(d dirRef) ([]string, error) {
	fd, err := unix.Dup(d.fd)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return f.Readdirnames(-1)
}

// readlinkIn is the target of d's symbolic link name.
func readlinkIn(d dirRef, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(d.fd, name, buf)
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: filepath.Join(d.path, name), Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// lstatIn is os.Lstat of d's entry name.
func lstatIn(d dirRef, name string) (fs.FileInfo, error) {
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
	return unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
}
