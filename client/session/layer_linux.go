package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/fsfd"
)

// copyTree copies the upper directory src to dst. With into, dst exists, and
// src's entries are copied into it. The root of dst is the caller's own (mode
// 0700); its extended attributes are copied.
//
// Every entry of src is opened relative to the descriptor of its parent, never
// following a symbolic link. So the copy stays inside src, whatever renames
// and links src's writer makes meanwhile. The copy fails with ErrLayerChanged
// when an entry changes while it is copied (replaced, written, its directory's
// entries changed), or when a second walk, once all is copied, finds one
// changed. So a copy that succeeds holds src as it was when the copy ended.
func copyTree(src, dst string, into bool) error {
	if !into {
		if err := os.Mkdir(dst, 0o700); err != nil {
			return err
		}
	}
	sfd, err := openDir(unix.AT_FDCWD, src)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	dfd, err := openDir(unix.AT_FDCWD, dst)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	c := &treeCopy{src: src, dst: dst, dstRoot: dfd, links: map[uint64]string{},
		stamps: map[string]stamp{}, names: map[string]int{}}
	defer c.restore()
	var before unix.Stat_t
	if err := unix.Fstat(sfd, &before); err != nil {
		return fmt.Errorf("stat %s: %w", src, err)
	}
	if err := c.xattrs(sfd, dfd, "."); err != nil {
		return err
	}
	if err := c.dir(sfd, dfd, "."); err != nil {
		return err
	}
	if err := c.unchanged(sfd, &before, "."); err != nil {
		return err
	}
	return c.verify(sfd, ".")
}

// treeCopy is one copyTree.
//
//   - links maps the inodes of src's files with several names to their first
//     copy, a path under dstRoot.
//   - stamps holds each entry of src as it was copied, and names the number of
//     entries of each directory, for verify.
//   - lent takes back the bits lent to open entries, once all is copied and
//     verified.
type treeCopy struct {
	src, dst string
	dstRoot  int
	links    map[uint64]string
	stamps   map[string]stamp
	names    map[string]int
	lent     []func()
}

// restore takes back the bits lent, the last first.
func (c *treeCopy) restore() {
	for i := len(c.lent) - 1; i >= 0; i-- {
		c.lent[i]()
	}
	c.lent = nil
}

// stamp is what tells that a file has not changed since.
//
// A file's change time moves with every write, rename of its entries, and
// change of mode or attribute. A writer cannot set it back.
type stamp struct {
	ino, nlink uint64
	mode       uint32
	size       int64
	ctime      unix.Timespec
	mtime      unix.Timespec
}

func stampOf(st *unix.Stat_t) stamp {
	return stamp{ino: st.Ino, nlink: uint64(st.Nlink), mode: st.Mode, size: st.Size, ctime: st.Ctim, mtime: st.Mtim}
}

// openDir opens the directory name of directory dir, not following a
// link.
func openDir(dir int, name string) (int, error) {
	return unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// srcPath is the path of src's entry rel, for messages.
func (c *treeCopy) srcPath(rel string) string { return filepath.Join(c.src, rel) }

// changed is the error of src's entry rel having changed, for what.
func (c *treeCopy) changed(rel, what string) error {
	return fmt.Errorf("%s: %s: %w", c.srcPath(rel), what, ErrLayerChanged)
}

// dir copies the entries of the source directory sfd (src's rel) into
// the directory dfd.
func (c *treeCopy) dir(sfd, dfd int, rel string) error {
	ents, err := readDirents(sfd)
	if err != nil {
		return fmt.Errorf("read %s: %w", c.srcPath(rel), err)
	}
	c.names[rel] = len(ents)
	for _, e := range ents {
		crel := filepath.Join(rel, e.name)
		if err := c.entry(sfd, dfd, crel, e); err != nil {
			return err
		}
	}
	return nil
}

// verify checks that every entry of the source directory sfd (src's rel) and
// below is as it was once copied, and that no entry came or went.
//
// The copy then holds src as it is now, whatever changed during it.
func (c *treeCopy) verify(sfd int, rel string) error {
	ents, err := readDirents(sfd)
	if err != nil {
		return fmt.Errorf("read %s: %w", c.srcPath(rel), err)
	}
	if len(ents) != c.names[rel] {
		return c.changed(rel, "its entries changed")
	}
	for _, e := range ents {
		crel := filepath.Join(rel, e.name)
		was, ok := c.stamps[crel]
		var st unix.Stat_t
		if !ok || unix.Fstatat(sfd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || stampOf(&st) != was {
			return c.changed(crel, "changed after its copy")
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		if err := c.verifyDir(sfd, crel, e.name, &st); err != nil {
			return err
		}
	}
	return nil
}

// verifyDir is verify of the directory name of sfd (src's rel, stat st).
func (c *treeCopy) verifyDir(sfd int, rel, name string, st *unix.Stat_t) error {
	in, err := c.open(sfd, rel, name, st, unix.O_RDONLY|unix.O_DIRECTORY, 0o500)
	if err != nil {
		return err
	}
	defer unix.Close(in)
	return c.verify(in, rel)
}

// entry copies the entry e of the source directory sfd, src's rel, to
// the directory dfd.
func (c *treeCopy) entry(sfd, dfd int, rel string, e dirent) error {
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return c.changed(rel, "removed")
		}
		return fmt.Errorf("stat %s: %w", c.srcPath(rel), err)
	}
	if st.Ino != e.ino || (e.typ != unix.DT_UNKNOWN && e.typ != dtype(st.Mode)) {
		return c.changed(rel, "replaced")
	}
	perm := uint32(st.Mode) & 0o7777
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := c.subdir(sfd, dfd, rel, e.name, &st); err != nil {
			return err
		}
	case unix.S_IFREG:
		if first, ok := c.links[st.Ino]; ok {
			if err := unix.Linkat(c.dstRoot, first, dfd, e.name, 0); err != nil {
				return fmt.Errorf("link %s: %w", filepath.Join(c.dst, rel), err)
			}
			c.stamps[rel] = stampOf(&st)
			return nil
		}
		if err := c.file(sfd, dfd, rel, e.name, &st); err != nil {
			return err
		}
		if st.Nlink > 1 {
			c.links[st.Ino] = rel
		}
	case unix.S_IFLNK:
		if err := c.symlink(sfd, dfd, rel, e.name, &st); err != nil {
			return err
		}
	case unix.S_IFCHR:
		// A whiteout: the overlay's mark of a deletion, which an
		// unprivileged user may make (Linux 5.8). No other device can
		// be in a rootless sandbox's upper directory.
		if st.Rdev != 0 {
			return fmt.Errorf("%s: a device (%d:%d) that is no whiteout", c.srcPath(rel), unix.Major(st.Rdev), unix.Minor(st.Rdev))
		}
		if err := unix.Mknodat(dfd, e.name, unix.S_IFCHR|perm, 0); err != nil {
			return fmt.Errorf("whiteout %s: %w", filepath.Join(c.dst, rel), err)
		}
	case unix.S_IFIFO, unix.S_IFSOCK:
		if err := unix.Mknodat(dfd, e.name, st.Mode&unix.S_IFMT|perm, 0); err != nil {
			return fmt.Errorf("mknod %s: %w", filepath.Join(c.dst, rel), err)
		}
	default:
		return fmt.Errorf("%s: a device that is no whiteout", c.srcPath(rel))
	}
	if _, ok := c.stamps[rel]; !ok {
		c.stamps[rel] = stampOf(&st) // a link, a whiteout, a fifo: no content
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(dfd, e.name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("times of %s: %w", filepath.Join(c.dst, rel), err)
	}
	return nil
}

// subdir copies the directory name of sfd (src's rel, stat st) to a new
// directory of dfd.
func (c *treeCopy) subdir(sfd, dfd int, rel, name string, st *unix.Stat_t) error {
	in, err := c.open(sfd, rel, name, st, unix.O_RDONLY|unix.O_DIRECTORY, 0o500)
	if err != nil {
		return err
	}
	defer unix.Close(in)
	var before unix.Stat_t
	if err := unix.Fstat(in, &before); err != nil {
		return fmt.Errorf("stat %s: %w", c.srcPath(rel), err)
	}
	if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
		return fmt.Errorf("mkdir %s: %w", filepath.Join(c.dst, rel), err)
	}
	out, err := openDir(dfd, name)
	if err != nil {
		return fmt.Errorf("open %s: %w", filepath.Join(c.dst, rel), err)
	}
	defer unix.Close(out)
	if err := c.xattrs(in, out, rel); err != nil {
		return err
	}
	if err := c.dir(in, out, rel); err != nil {
		return err
	}
	if err := c.unchanged(in, &before, rel); err != nil {
		return err
	}
	if err := unix.Fchmod(out, uint32(st.Mode)&0o7777); err != nil {
		return fmt.Errorf("chmod %s: %w", filepath.Join(c.dst, rel), err)
	}
	return nil
}

// file copies the regular file name of sfd (src's rel, stat st) to a new file
// of dfd.
//
// The copy is a clone (reflink) where the file system shares blocks, else a
// copy of the data.
func (c *treeCopy) file(sfd, dfd int, rel, name string, st *unix.Stat_t) error {
	in, err := c.open(sfd, rel, name, st, unix.O_RDONLY|unix.O_NONBLOCK, 0o400)
	if err != nil {
		return err
	}
	defer unix.Close(in)
	var before unix.Stat_t
	if err := unix.Fstat(in, &before); err != nil {
		return fmt.Errorf("stat %s: %w", c.srcPath(rel), err)
	}
	if testHookCopying != nil {
		testHookCopying(rel)
	}
	dstPath := filepath.Join(c.dst, rel)
	ofd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", dstPath, err)
	}
	out := os.NewFile(uintptr(ofd), dstPath)
	defer out.Close()
	if unix.IoctlFileClone(ofd, in) != nil {
		// A file of the sandbox's own descriptor: os.File would take it.
		if _, err := io.Copy(out, fdReader(in)); err != nil {
			return fmt.Errorf("copy %s: %w", c.srcPath(rel), err)
		}
	}
	if err := c.xattrs(in, ofd, rel); err != nil {
		return err
	}
	if err := c.unchanged(in, &before, rel); err != nil {
		return err
	}
	if err := unix.Fchmod(ofd, uint32(st.Mode)&0o7777); err != nil {
		return fmt.Errorf("chmod %s: %w", dstPath, err)
	}
	return out.Close()
}

// testHookCopying, if set, is called with a file's path once its copy has
// taken the file's state, before it reads the file.
var testHookCopying func(rel string)

// symlink copies the symbolic link name of sfd (src's rel, stat st) to
// dfd.
func (c *treeCopy) symlink(sfd, dfd int, rel, name string, st *unix.Stat_t) error {
	buf := make([]byte, st.Size+1)
	n, err := unix.Readlinkat(sfd, name, buf)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return c.changed(rel, "replaced")
	}
	if err != nil {
		return fmt.Errorf("readlink %s: %w", c.srcPath(rel), err)
	}
	var after unix.Stat_t
	if err := unix.Fstatat(sfd, name, &after, unix.AT_SYMLINK_NOFOLLOW); err != nil || after.Ino != st.Ino || n != int(st.Size) {
		return c.changed(rel, "replaced")
	}
	if err := unix.Symlinkat(string(buf[:n]), dfd, name); err != nil {
		return fmt.Errorf("symlink %s: %w", filepath.Join(c.dst, rel), err)
	}
	return nil
}

// open opens the entry name of sfd (src's rel), which must be the inode
// of st, with flags, not following a link. An entry whose mode refuses
// the caller (a sandbox may close its own files and directories) is
// lent bits of its owner's permissions until the copy ends (restore).
func (c *treeCopy) open(sfd int, rel, name string, st *unix.Stat_t, flags int, bits uint32) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(sfd, name, flags, 0)
	if errors.Is(err, unix.EACCES) {
		lent, lerr := c.lend(sfd, rel, name, st, bits)
		if lerr != nil {
			return -1, lerr
		}
		c.lent = append(c.lent, lent)
		fd, err = unix.Openat(sfd, name, flags, 0)
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, c.changed(rel, "replaced")
	}
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", c.srcPath(rel), err)
	}
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil || got.Ino != st.Ino || got.Dev != st.Dev || got.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		unix.Close(fd)
		return -1, c.changed(rel, "replaced")
	}
	return fd, nil
}

// lend adds bits to the owner permissions of the entry name of sfd,
// which must be the inode of st, and returns what takes them back. The
// entry is held by a descriptor of its own (O_PATH), so that neither
// change can reach another file.
func (c *treeCopy) lend(sfd int, rel, name string, st *unix.Stat_t, bits uint32) (func(), error) {
	pfd, err := unix.Openat(sfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, c.changed(rel, "replaced")
	}
	var got unix.Stat_t
	if err := unix.Fstat(pfd, &got); err != nil || got.Ino != st.Ino || got.Dev != st.Dev || got.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		unix.Close(pfd)
		return nil, c.changed(rel, "replaced")
	}
	mode := got.Mode & 0o7777
	if err := fsfd.Chmod(pfd, mode|bits); err != nil {
		unix.Close(pfd)
		return nil, fmt.Errorf("open %s: %w", c.srcPath(rel), err)
	}
	return func() {
		_ = fsfd.Chmod(pfd, mode)
		unix.Close(pfd)
	}, nil
}

// unchanged checks that the source file fd (src's rel) is as it was before.
//
// Its change time moves with every write, rename of its entries, and change of
// mode or attribute.
func (c *treeCopy) unchanged(fd int, before *unix.Stat_t, rel string) error {
	var after unix.Stat_t
	if err := unix.Fstat(fd, &after); err != nil {
		return fmt.Errorf("stat %s: %w", c.srcPath(rel), err)
	}
	if after.Ctim != before.Ctim || after.Mtim != before.Mtim || after.Size != before.Size || after.Nlink != before.Nlink {
		return c.changed(rel, "written")
	}
	c.stamps[rel] = stampOf(&after)
	return nil
}

// xattrs copies the user.* and trusted.* extended attributes of the
// source file in (src's rel) to the file out (trusted.* where the
// caller may set them).
func (c *treeCopy) xattrs(in, out int, rel string) error {
	names, err := listXattrs(in)
	if err != nil {
		return fmt.Errorf("attributes of %s: %w", c.srcPath(rel), err)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "user.") && !strings.HasPrefix(name, "trusted.") {
			continue
		}
		val, err := getXattr(in, name)
		if err != nil {
			return fmt.Errorf("attribute %s of %s: %w", name, c.srcPath(rel), err)
		}
		if err := unix.Fsetxattr(out, name, val, 0); err != nil {
			if strings.HasPrefix(name, "trusted.") && errors.Is(err, syscall.EPERM) {
				continue
			}
			return fmt.Errorf("attribute %s of %s: %w", name, filepath.Join(c.dst, rel), err)
		}
	}
	return nil
}

// listXattrs lists the extended attributes of the file fd.
func listXattrs(fd int) ([]string, error) {
	for {
		size, err := unix.Flistxattr(fd, nil)
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		if err != nil || size == 0 {
			return nil, err
		}
		buf := make([]byte, size)
		n, err := unix.Flistxattr(fd, buf)
		if errors.Is(err, unix.ERANGE) {
			continue // grown meanwhile
		}
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
}

// getXattr is the value of the attribute name of the file fd.
func getXattr(fd int, name string) ([]byte, error) {
	for {
		size, err := unix.Fgetxattr(fd, name, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size)
		n, err := unix.Fgetxattr(fd, name, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

// dirent is an entry of a directory as the directory lists it.
type dirent struct {
	name string
	ino  uint64
	typ  uint8
}

// readDirents lists the entries of the directory fd (but . and ..),
// from its start.
func readDirents(fd int) ([]dirent, error) {
	if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
		return nil, err
	}
	var ents []dirent
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return ents, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino, off, reclen, type, name.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, errors.New("a malformed directory entry")
			}
			name := b[19:reclen]
			if i := strings.IndexByte(string(name), 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				ents = append(ents, dirent{name: s, ino: binary.NativeEndian.Uint64(b[0:8]), typ: b[18]})
			}
			b = b[reclen:]
		}
	}
}

// dtype is the directory entry type of file mode m.
func dtype(m uint32) uint8 {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFLNK:
		return unix.DT_LNK
	case unix.S_IFCHR:
		return unix.DT_CHR
	case unix.S_IFBLK:
		return unix.DT_BLK
	case unix.S_IFIFO:
		return unix.DT_FIFO
	case unix.S_IFSOCK:
		return unix.DT_SOCK
	}
	return unix.DT_UNKNOWN
}

// fdReader reads the descriptor fd, which stays the caller's.
type fdReader int

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(r), p)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}
