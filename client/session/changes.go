package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Kind is the kind of a change.
type Kind string

// Kinds of changes, as Changes reports them.
const (
	// Added: the path is in DST and not in SRC. The files and
	// directories inside an added directory are listed as added too.
	Added Kind = "added"
	// Modified: a file's content differs (its mode may too: see Mode and
	// OldMode).
	Modified Kind = "modified"
	// Deleted: the path (a file, or a directory with everything in it)
	// was removed in the sandbox.
	Deleted Kind = "deleted"
	// DirReplaced means a directory of SRC was removed and made again in
	// the sandbox (an opaque directory), and differs. What SRC's directory
	// held and DST's does not follows as deleted; the rest follows as
	// added or modified.
	DirReplaced Kind = "dir_replaced"
	// TypeChanged means the path is of another type: a directory replaced
	// by a file, a file by a symbolic link, and so on. A new directory's
	// contents follow as added.
	TypeChanged Kind = "type_changed"
	// ModeChanged: only the permission bits differ.
	ModeChanged Kind = "mode_changed"
	// SymlinkChanged: a symbolic link points elsewhere.
	SymlinkChanged Kind = "symlink_changed"
)

// Change is one change of a copy-on-write session: a path of DST (the
// sandbox's view) that differs from SRC.
type Change struct {
	// Path is relative to SRC and DST, with forward slashes.
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// Type is the path's type in DST, or in SRC for Deleted. OldType is
	// its type in SRC, empty when SRC has no such path.
	Type    FileType `json:"type"`
	OldType FileType `json:"old_type,omitempty"`
	// Mode and OldMode are the permission bits in DST and SRC.
	Mode    fs.FileMode `json:"mode"`
	OldMode fs.FileMode `json:"old_mode,omitempty"`
	// Size is a file's size in DST.
	Size int64 `json:"size,omitempty"`
	// Target and OldTarget are the targets of symbolic links.
	Target    string `json:"target,omitempty"`
	OldTarget string `json:"old_target,omitempty"`
}

// String returns the change as `boxsh changes` prints it.
//
// That is a letter and the path. The letters are A added, M modified, D
// deleted, R directory replaced, T type changed, P mode changed and L link
// changed. The path, and a link's target, are quoted as git quotes them (see
// QuotePath).
//
// The mode of every new file or directory is shown, and a mode change as OLD
// -> NEW, in chmod's octal (0644, 01777). A warning follows for bits that open
// the file to other users or run it as another user, when SRC did not have
// them: group-writable, world-writable, setuid, setgid.
func (c Change) String() string {
	letter := map[Kind]string{Added: "A", Modified: "M", Deleted: "D", DirReplaced: "R", TypeChanged: "T", ModeChanged: "P", SymlinkChanged: "L"}[c.Kind]
	name := c.Path
	if c.Type == TypeDir {
		name += "/"
	}
	s := letter + " " + QuotePath(name)
	var detail []string
	newEntry := c.Kind == Added || c.Kind == TypeChanged
	switch {
	case c.Kind == TypeChanged:
		detail = append(detail, fmt.Sprintf("%s -> %s", c.OldType, c.Type))
	case c.Kind == SymlinkChanged || (c.Kind == Added && c.Type == TypeSymlink):
		s += " -> " + QuotePath(c.Target)
	}
	switch {
	case c.Type == TypeSymlink || c.Kind == Deleted:
	case newEntry:
		detail = append(detail, modeString(c.Mode))
		if w := modeWarning(c.Mode, 0); w != "" {
			detail = append(detail, w)
		}
	case c.Mode != c.OldMode:
		detail = append(detail, modeString(c.OldMode)+" -> "+modeString(c.Mode))
		if w := modeWarning(c.Mode, c.OldMode); w != "" {
			detail = append(detail, w)
		}
	}
	if len(detail) > 0 {
		s += " (" + strings.Join(detail, ", ") + ")"
	}
	return s
}

// Changes lists how dst, the upper directory of an overlay on src, differs
// from src.
//
// dst is a copy-on-write bind's DST. The list is sorted by path, parents
// before their contents.
//
//   - Whiteouts (character devices 0/0, or empty files with an
//     overlay.whiteout attribute) are deletions.
//   - Opaque directories replace SRC's.
//   - A file copied up without a change of content or mode (touched) is not a
//     change.
//
// Each directory is opened beneath its parent without following a link. So a
// directory of DST swapped for a link while Changes runs shows nothing outside
// DST.
func Changes(src, dst string) ([]Change, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	ddir, err := openDirIn(dirRef{fd: -1}, dst)
	if err != nil {
		return nil, fmt.Errorf("changes: %w", err)
	}
	sdir, err := openDirIn(dirRef{fd: -1}, src)
	if err != nil {
		closeDirRef(ddir)
		return nil, fmt.Errorf("changes: %w", err)
	}
	w := &changeWalker{src: src, dst: dst, sem: make(chan struct{}, 8)}
	return w.walk("", ddir, sdir, true, false)
}

// changeWalker walks DST against SRC; directories are walked in parallel
// (up to cap(sem) at once), their changes put back in order.
type changeWalker struct {
	src, dst string
	sem      chan struct{}
	bufs     sync.Pool
}

// descent is how to walk below a DST directory.
type descent struct {
	// merged: SRC has a directory there that DST's merges with; opaque:
	// DST's hides it (what only SRC has is deleted).
	merged, opaque bool
}

// slot is one name of a directory being walked: its change, and the
// changes below it.
type slot struct {
	c        *Change
	children []Change
	err      error
	done     chan struct{}
}

// walk lists the changes below rel, the DST directory ddir (and SRC's
// sdir where merged, see descent), and closes both.
func (w *changeWalker) walk(rel string, ddir, sdir dirRef, merged, opaque bool) ([]Change, error) {
	defer closeDirRef(ddir)
	defer closeDirRef(sdir)
	names, err := readNamesIn(ddir)
	if err != nil {
		return nil, fmt.Errorf("changes: %w", err)
	}
	var gone map[string]bool
	if merged && opaque {
		srcNames, err := readNamesIn(sdir)
		if err != nil {
			return nil, fmt.Errorf("changes: %w", err)
		}
		have := map[string]bool{}
		for _, n := range names {
			have[n] = true
		}
		gone = map[string]bool{}
		for _, n := range srcNames {
			if !have[n] {
				gone[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	slots := make([]slot, len(names))
	for i, name := range names {
		crel := name
		if rel != "" {
			crel = rel + "/" + name
		}
		sl := &slots[i]
		if gone[name] {
			sfi, err := lstatIn(sdir, name)
			if err == nil {
				t := typeOf(sfi.Mode())
				sl.c = &Change{Path: crel, Kind: Deleted, Type: t, OldType: t, OldMode: sfi.Mode() & modeBits}
			}
			continue
		}
		c, d, err := w.entry(crel, ddir, sdir, name, merged)
		if err != nil {
			return nil, err
		}
		sl.c = c
		if d == nil {
			continue
		}
		cd, cs, err := w.openBelow(crel, ddir, sdir, name, d.merged)
		if err != nil {
			return nil, err
		}
		select {
		case w.sem <- struct{}{}:
			sl.done = make(chan struct{})
			go func() {
				defer close(sl.done)
				sl.children, sl.err = w.walk(crel, cd, cs, d.merged, d.opaque)
				<-w.sem
			}()
		default:
			if sl.children, err = w.walk(crel, cd, cs, d.merged, d.opaque); err != nil {
				return nil, err
			}
		}
	}
	var out []Change
	var firstErr error
	for i := range slots {
		sl := &slots[i]
		if sl.done != nil {
			<-sl.done
		}
		if sl.err != nil && firstErr == nil {
			firstErr = sl.err
		}
		if sl.c != nil && sl.c.Kind == DirReplaced && len(sl.children) == 0 {
			// An opaque directory whose contents are SRC's: at most its
			// mode changed.
			if sl.c.Mode == sl.c.OldMode {
				continue
			}
			sl.c.Kind = ModeChanged
		}
		if sl.c != nil && sl.c.Kind != "" {
			out = append(out, *sl.c)
		}
		out = append(out, sl.children...)
	}
	return out, firstErr
}

// openBelow opens the directory name of DST's ddir (rel), and of SRC's
// sdir where merged, each beneath its parent without following a link.
func (w *changeWalker) openBelow(rel string, ddir, sdir dirRef, name string, merged bool) (cd, cs dirRef, err error) {
	cs = dirRef{fd: -1}
	if cd, err = openDirIn(ddir, name); err != nil {
		return cd, cs, fmt.Errorf("changes: %w", err)
	}
	if merged {
		if cs, err = openDirIn(sdir, name); err != nil {
			closeDirRef(cd)
			return cd, cs, fmt.Errorf("changes: %w", err)
		}
	}
	return cd, cs, nil
}

// entry is the change of one DST path (nil or of no Kind when it
// differs not), and how to walk below it (nil: not a directory).
func (w *changeWalker) entry(rel string, ddir, sdir dirRef, name string, merged bool) (*Change, *descent, error) {
	fi, err := lstatIn(ddir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil // removed while we looked
	}
	if err != nil {
		return nil, nil, fmt.Errorf("changes: %w", err)
	}
	var sfi fs.FileInfo
	if merged {
		sfi, err = lstatIn(sdir, name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return nil, nil, fmt.Errorf("changes: %w", err)
		}
	}
	if isWhiteout(ddir.entry(name), fi) {
		if sfi != nil {
			t := typeOf(sfi.Mode())
			return &Change{Path: rel, Kind: Deleted, Type: t, OldType: t, OldMode: sfi.Mode() & modeBits}, nil, nil
		}
		return nil, nil, nil
	}
	c := &Change{Path: rel, Type: typeOf(fi.Mode()), Mode: fi.Mode() & modeBits}
	if c.Type == TypeFile {
		c.Size = fi.Size()
	}
	if c.Type == TypeSymlink {
		if c.Target, err = readlinkIn(ddir, name); err != nil {
			return nil, nil, fmt.Errorf("changes: %w", err)
		}
	}
	var below *descent
	if c.Type == TypeDir {
		below = &descent{}
	}
	if sfi == nil {
		c.Kind = Added
		return c, below, nil
	}
	c.OldType, c.OldMode = typeOf(sfi.Mode()), sfi.Mode()&modeBits
	switch {
	case c.Type != c.OldType:
		c.Kind = TypeChanged
		if c.OldType == TypeSymlink {
			c.OldTarget, _ = readlinkIn(sdir, name)
		}
	case c.Type == TypeDir:
		below.merged = true
		if isOpaque(ddir.entry(name)) {
			// Replaced when anything below differs from SRC's (walk
			// decides).
			c.Kind = DirReplaced
			below.opaque = true
		} else if c.Mode != c.OldMode {
			c.Kind = ModeChanged
		}
	case c.Type == TypeSymlink:
		if c.OldTarget, err = readlinkIn(sdir, name); err != nil {
			return nil, nil, fmt.Errorf("changes: %w", err)
		}
		if c.Target != c.OldTarget {
			c.Kind = SymlinkChanged
		}
	case c.Type == TypeFile:
		same, err := w.sameContent(ddir, sdir, name, fi.Size(), sfi.Size())
		if err != nil {
			return nil, nil, err
		}
		if !same {
			c.Kind = Modified
		} else if c.Mode != c.OldMode {
			c.Kind = ModeChanged
		}
	default:
		if c.Mode != c.OldMode {
			c.Kind = ModeChanged
		}
	}
	return c, below, nil
}

// sameContent tells whether the files name in da and db (of sizes sa
// and sb) hold the same bytes.
func (w *changeWalker) sameContent(da, db dirRef, name string, sa, sb int64) (bool, error) {
	if sa != sb {
		return false, nil
	}
	if sa == 0 {
		return true, nil
	}
	a, b := filepath.Join(da.path, name), filepath.Join(db.path, name)
	fa, err := openIn(da, name)
	if err != nil {
		return false, fmt.Errorf("changes: open %s: %w", a, err)
	}
	defer unix.Close(fa)
	fb, err := openIn(db, name)
	if err != nil {
		return false, fmt.Errorf("changes: open %s: %w", b, err)
	}
	defer unix.Close(fb)
	bufs, _ := w.bufs.Get().(*[2][]byte)
	if bufs == nil {
		bufs = &[2][]byte{make([]byte, 64<<10), make([]byte, 64<<10)}
	}
	defer w.bufs.Put(bufs)
	for left := sa; left > 0; {
		n := int(min(left, int64(len(bufs[0]))))
		if err := readFull(fa, bufs[0][:n]); err != nil {
			return false, fmt.Errorf("changes: read %s: %w", a, err)
		}
		if err := readFull(fb, bufs[1][:n]); err != nil {
			return false, fmt.Errorf("changes: read %s: %w", b, err)
		}
		if !bytes.Equal(bufs[0][:n], bufs[1][:n]) {
			return false, nil
		}
		left -= int64(n)
	}
	return true, nil
}

// readFull fills p from fd; a file shorter than its size was cut
// meanwhile (io.ErrUnexpectedEOF).
func readFull(fd int, p []byte) error {
	for len(p) > 0 {
		n, err := unix.Read(fd, p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		p = p[n:]
	}
	return nil
}

// Supported tells whether sessions' changes can be read and applied here.
//
// Changes are an overlay's upper directory, read and applied with Linux's
// openat2. (On macOS a cow DST is a full clone of SRC.)
func Supported() error {
	if goruntime.GOOS != "linux" {
		return fmt.Errorf("copy-on-write sessions are reviewed and applied on Linux only, not on %s", goruntime.GOOS)
	}
	return nil
}

// isWhiteout tells whether the DST entry at path (fi) marks a deletion:
// a character device 0/0, or an empty regular file with the
// user.overlay.whiteout (or trusted.overlay.whiteout) attribute.
func isWhiteout(path string, fi fs.FileInfo) bool {
	m := fi.Mode()
	if m&fs.ModeCharDevice != 0 && m&fs.ModeDevice != 0 {
		_, rdev := ownerRdev(fi)
		return rdev == 0
	}
	if m.IsRegular() && fi.Size() == 0 {
		return hasXattr(path, "user.overlay.whiteout") || hasXattr(path, "trusted.overlay.whiteout")
	}
	return false
}

// isOpaque tells whether the DST directory at path is opaque: it hides
// SRC's directory instead of merging with it.
func isOpaque(path string) bool {
	return xattrValue(path, "user.overlay.opaque") == "y" || xattrValue(path, "trusted.overlay.opaque") == "y"
}
