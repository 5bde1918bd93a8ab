package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/fsfd"
)

// treeFS changes SRC and reads DST through directory descriptors, never
// following a symbolic link.
//
// Every path is resolved by openat2 with RESOLVE_NO_SYMLINKS and
// RESOLVE_BENEATH. So a link planted in either tree, where a directory was,
// cannot lead a write outside SRC or a read outside DST.
type treeFS struct {
	src, dst int // directory descriptors of SRC and DST
	uid      int
}

// openTree opens SRC and DST.
func openTree(src, dst string) (*treeFS, error) {
	s, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open SRC %s: %w", src, err)
	}
	d, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(s)
		return nil, fmt.Errorf("open DST %s: %w", dst, err)
	}
	return &treeFS{src: s, dst: d, uid: os.Getuid()}, nil
}

func (t *treeFS) close() {
	unix.Close(t.src)
	unix.Close(t.dst)
}

// beneath opens rel below root without following any symbolic link.
func beneath(root int, rel string, flags uint64) (int, error) {
	if rel == "." || rel == "" {
		return unix.Openat(root, ".", int(flags)|unix.O_CLOEXEC, 0)
	}
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   flags | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return -1, fmt.Errorf("%s: a symbolic link (never followed) or a file is in the way", QuotePath(rel))
		}
		return -1, fmt.Errorf("%s: %w", QuotePath(rel), err)
	}
	return fd, nil
}

// parent opens the directory of rel in the tree root, and returns it
// with rel's last name.
func parent(root int, rel string) (int, string, error) {
	dir, name := path.Split(rel)
	if dir == "" {
		dir = "."
	}
	fd, err := beneath(root, path.Clean(dir), unix.O_RDONLY|unix.O_DIRECTORY)
	return fd, name, err
}

// tempName is a fresh name for a file written beside its destination.
func tempName(name string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return ".boxsh-apply-" + hex.EncodeToString(b[:]) + "-" + name
}

// copyFile writes DST's file rel to SRC: a new file beside the
// destination, renamed over it, with DST's mode held to allowed (see
// applyMode).
func (t *treeFS) copyFile(rel string, allowed uint32) error {
	in, err := beneath(t.dst, rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return fmt.Errorf("read DST: %w", err)
	}
	inf := os.NewFile(uintptr(in), rel)
	defer inf.Close()
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is no longer a regular file in DST", QuotePath(rel))
	}
	if int(st.Uid) != t.uid || st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		return fmt.Errorf("%s changed owner or gained setuid/setgid bits in DST", QuotePath(rel))
	}
	pfd, name, err := parent(t.src, rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	tmp := tempName(name)
	out, err := unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	outf := os.NewFile(uintptr(out), tmp)
	_, err = io.Copy(outf, inf)
	if err == nil {
		err = unix.Fchmod(out, applyMode(st.Mode&0o7777, allowed))
	}
	if cerr := outf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(pfd, tmp, pfd, name)
	}
	if err != nil {
		unix.Unlinkat(pfd, tmp, 0)
		return err
	}
	return nil
}

// copySymlink makes SRC's rel a symbolic link with the target DST's has.
func (t *treeFS) copySymlink(rel string) error {
	dfd, name, err := parent(t.dst, rel)
	if err != nil {
		return fmt.Errorf("read DST: %w", err)
	}
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, name, buf)
	unix.Close(dfd)
	if err != nil {
		return fmt.Errorf("read DST: %s: %w", QuotePath(rel), err)
	}
	target := string(buf[:n])
	pfd, name, err := parent(t.src, rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	tmp := tempName(name)
	if err := unix.Symlinkat(target, pfd, tmp); err != nil {
		return err
	}
	if err := unix.Renameat(pfd, tmp, pfd, name); err != nil {
		unix.Unlinkat(pfd, tmp, 0)
		return err
	}
	return nil
}

// mkdir makes the directory rel in SRC (mode 0700 until its contents are
// in).
func (t *treeFS) mkdir(rel string) error {
	pfd, name, err := parent(t.src, rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	return unix.Mkdirat(pfd, name, 0o700)
}

// chmod sets the mode (kernel bits) of SRC's rel, a file or directory
// (never a link).
func (t *treeFS) chmod(rel string, mode uint32) error {
	fd, err := beneath(t.src, rel, unix.O_PATH)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if k := st.Mode & unix.S_IFMT; k != unix.S_IFREG && k != unix.S_IFDIR {
		return fmt.Errorf("%s: not a file or directory", QuotePath(rel))
	}
	return fsfd.Chmod(fd, mode&0o7777)
}

// remove removes SRC's rel and, for a directory, everything in it.
func (t *treeFS) remove(rel string) error {
	pfd, name, err := parent(t.src, rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	return removeAt(pfd, name)
}

// removeAt removes name in directory dirfd, recursively, not following
// links.
func removeAt(dirfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(dirfd, name, 0)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := clearAt(fd); err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// clearAt removes the entries of directory fd, and closes fd.
func clearAt(fd int) error {
	f := os.NewFile(uintptr(fd), "dir")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := removeAt(fd, n); err != nil {
			return fmt.Errorf("remove %s: %w", n, err)
		}
	}
	return nil
}

// lockFile takes an exclusive lock on path until the returned function
// is called.
func lockFile(path string) (func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lock session: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock session: %w", err)
	}
	return func() { f.Close() }, nil
}

// readlinkNoFollow is the target of the symbolic link rel below root,
// its directories opened without following a link.
func readlinkNoFollow(root, rel string) (string, error) {
	rfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", root, err)
	}
	defer unix.Close(rfd)
	dfd, name, err := parent(rfd, rel)
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", fmt.Errorf("%s: %w", QuotePath(rel), err)
	}
	return string(buf[:n]), nil
}

// errTooLarge is the error of readNoFollow for a file over its limit.
var errTooLarge = errors.New("file too large")

// readNoFollow reads the regular file rel below root, never following a
// symbolic link, up to max bytes (errTooLarge beyond).
func readNoFollow(root, rel string, max int64) ([]byte, error) {
	rfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	defer unix.Close(rfd)
	fd, err := beneath(rfd, rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", QuotePath(rel))
	}
	if fi.Size() > max {
		return nil, errTooLarge
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}
