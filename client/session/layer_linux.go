package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// copyTree copies the upper directory src to dst (into: dst exists, and
// src's entries are copied into it). The root of dst is the caller's own
// (mode 0700); its extended attributes are copied.
func copyTree(src, dst string, into bool) error {
	if !into {
		if err := os.Mkdir(dst, 0o700); err != nil {
			return err
		}
	}
	c := &treeCopy{links: map[uint64]string{}}
	if err := c.xattrs(src, dst); err != nil {
		return err
	}
	return c.dir(src, dst)
}

// treeCopy is one copyTree: links maps the inodes of src's files with
// several names to their first copy.
type treeCopy struct {
	links map[uint64]string
}

// dir copies the entries of directory src into directory dst.
func (c *treeCopy) dir(src, dst string) error {
	names, restore, err := readLockedNames(src)
	if err != nil {
		return err
	}
	defer restore()
	for _, name := range names {
		if err := c.entry(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return nil
}

// readLockedNames lists directory path, which the sandbox may have made
// unreadable (mode 0): its owner's bits are then lent until restore.
func readLockedNames(path string) (names []string, restore func(), err error) {
	restore = func() {}
	names, err = readNames(path)
	if errors.Is(err, fs.ErrPermission) {
		lent, lerr := lendOwnerBits(path, 0o500)
		if lerr != nil {
			return nil, restore, err
		}
		names, err = readNames(path)
		if err != nil {
			lent()
			return nil, restore, err
		}
		restore = lent
	}
	return names, restore, err
}

// lendOwnerBits adds bits to path's owner permissions, and returns what
// takes them back.
func lendOwnerBits(path string, bits fs.FileMode) (func(), error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	mode := fi.Mode()
	if err := os.Chmod(path, mode.Perm()|bits|mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return nil, err
	}
	return func() { _ = os.Chmod(path, mode.Perm()|mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)) }, nil
}

// entry copies the entry src to dst.
func (c *treeCopy) entry(src, dst string) error {
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		return fmt.Errorf("stat %s: %w", src, err)
	}
	perm := uint32(st.Mode) & 0o7777
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := os.Mkdir(dst, 0o700); err != nil {
			return err
		}
		if err := c.xattrs(src, dst); err != nil {
			return err
		}
		if err := c.dir(src, dst); err != nil {
			return err
		}
		if err := unix.Chmod(dst, perm); err != nil {
			return fmt.Errorf("chmod %s: %w", dst, err)
		}
	case unix.S_IFREG:
		if first, ok := c.links[st.Ino]; ok {
			return os.Link(first, dst)
		}
		if err := copyData(src, dst); err != nil {
			return err
		}
		if err := c.xattrs(src, dst); err != nil {
			return err
		}
		if err := unix.Chmod(dst, perm); err != nil {
			return fmt.Errorf("chmod %s: %w", dst, err)
		}
		if st.Nlink > 1 {
			c.links[st.Ino] = dst
		}
	case unix.S_IFLNK:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, dst); err != nil {
			return err
		}
	case unix.S_IFCHR:
		// A whiteout: the overlay's mark of a deletion, which an
		// unprivileged user may make (Linux 5.8). No other device can
		// be in a rootless sandbox's upper directory.
		if st.Rdev != 0 {
			return fmt.Errorf("%s: a device (%d:%d) that is no whiteout", src, unix.Major(st.Rdev), unix.Minor(st.Rdev))
		}
		if err := unix.Mknod(dst, unix.S_IFCHR|perm, 0); err != nil {
			return fmt.Errorf("whiteout %s: %w", dst, err)
		}
	case unix.S_IFIFO, unix.S_IFSOCK:
		if err := unix.Mknod(dst, st.Mode&unix.S_IFMT|perm, 0); err != nil {
			return fmt.Errorf("mknod %s: %w", dst, err)
		}
	default:
		return fmt.Errorf("%s: a device that is no whiteout", src)
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("times of %s: %w", dst, err)
	}
	return nil
}

// copyData copies the regular file src to the new file dst: a clone
// (reflink) where the file system shares blocks, else a copy.
func copyData(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrPermission) {
		restore, lerr := lendOwnerBits(src, 0o400)
		if lerr != nil {
			return err
		}
		defer restore()
		in, err = os.Open(src)
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) != nil {
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return fmt.Errorf("copy %s: %w", src, err)
		}
	}
	return out.Close()
}

// xattrs copies the user.* and trusted.* extended attributes of src to
// dst (trusted.* where the caller may set them). Symbolic links and
// devices have none of the user's.
func (c *treeCopy) xattrs(src, dst string) error {
	names, err := listXattrs(src)
	if err != nil {
		return err
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "user.") && !strings.HasPrefix(name, "trusted.") {
			continue
		}
		val, err := getXattr(src, name)
		if err != nil {
			return fmt.Errorf("attribute %s of %s: %w", name, src, err)
		}
		if err := unix.Lsetxattr(dst, name, val, 0); err != nil {
			if strings.HasPrefix(name, "trusted.") && errors.Is(err, syscall.EPERM) {
				continue
			}
			return fmt.Errorf("attribute %s of %s: %w", name, dst, err)
		}
	}
	return nil
}

// listXattrs lists the extended attributes of path (not followed).
func listXattrs(path string) ([]string, error) {
	size, err := unix.Llistxattr(path, nil)
	if errors.Is(err, unix.ENOTSUP) {
		return nil, nil
	}
	if err != nil || size == 0 {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := unix.Llistxattr(path, buf)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range strings.Split(string(buf[:n]), "\x00") {
		if s != "" {
			names = append(names, s)
		}
	}
	return names, nil
}

// getXattr is the value of path's attribute name.
func getXattr(path, name string) ([]byte, error) {
	size, err := unix.Lgetxattr(path, name, nil)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := unix.Lgetxattr(path, name, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
