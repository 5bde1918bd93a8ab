package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
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
	// DirReplaced: a directory of SRC was removed and made again in the
	// sandbox (an opaque directory) and differs: what it held and DST's
	// has not follows as deleted, the rest as added or modified.
	DirReplaced Kind = "dir_replaced"
	// TypeChanged: the path is of another type (a directory replaced by a
	// file, a file by a symbolic link, ...); a new directory's contents
	// follow as added.
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
	// Type is the path's type in DST (for Deleted: in SRC), OldType its
	// type in SRC (empty when SRC has no such path).
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

// String is the change as `boxsh changes` prints it: a letter (A added,
// M modified, D deleted, R directory replaced, T type changed, P mode
// changed, L link changed) and the path.
func (c Change) String() string {
	letter := map[Kind]string{Added: "A", Modified: "M", Deleted: "D", DirReplaced: "R", TypeChanged: "T", ModeChanged: "P", SymlinkChanged: "L"}[c.Kind]
	s := letter + " " + c.Path
	if c.Type == TypeDir {
		s += "/"
	}
	switch {
	case c.Kind == TypeChanged:
		s += fmt.Sprintf(" (%s -> %s)", c.OldType, c.Type)
	case c.Kind == SymlinkChanged || (c.Kind == Added && c.Type == TypeSymlink):
		s += " -> " + c.Target
	case c.Kind == ModeChanged || (c.Kind == Modified && c.Mode != c.OldMode):
		s += fmt.Sprintf(" (%04o -> %04o)", c.OldMode, c.Mode)
	}
	return s
}

// Changes lists how the upper directory dst of an overlay on src (a
// copy-on-write bind's DST) differs from src, sorted by path, parents
// before their contents. Whiteouts (character devices 0/0, or empty files
// with an overlay.whiteout attribute) are deletions; opaque directories
// replace SRC's. A file copied up without a change of content or mode
// (touched) is not a change.
func Changes(src, dst string) ([]Change, error) {
	w := &changeWalker{src: src, dst: dst}
	if err := w.walk("", true, false); err != nil {
		return nil, err
	}
	return w.out, nil
}

type changeWalker struct {
	src, dst string
	out      []Change
	buf1     []byte
	buf2     []byte
}

// walk lists the changes below rel; merged tells whether SRC has a
// directory at rel that DST's merges with (otherwise everything below is
// added), opaque whether DST's hides it: then what SRC has and DST has
// not is deleted.
func (w *changeWalker) walk(rel string, merged, opaque bool) error {
	dir := filepath.Join(w.dst, filepath.FromSlash(rel))
	names, err := readNames(dir)
	if err != nil {
		return fmt.Errorf("changes: %w", err)
	}
	var gone map[string]bool
	if merged && opaque {
		srcNames, err := readNames(filepath.Join(w.src, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("changes: %w", err)
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
	for _, name := range names {
		crel := name
		if rel != "" {
			crel = rel + "/" + name
		}
		if gone[name] {
			sfi, err := os.Lstat(filepath.Join(w.src, filepath.FromSlash(crel)))
			if err != nil {
				continue
			}
			t := typeOf(sfi.Mode())
			w.out = append(w.out, Change{Path: crel, Kind: Deleted, Type: t, OldType: t, OldMode: sfi.Mode() & modeBits})
			continue
		}
		if err := w.entry(crel, merged); err != nil {
			return err
		}
	}
	return nil
}

// readNames lists the names in directory dir.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// entry lists the change of one DST path, and of what is below it.
func (w *changeWalker) entry(rel string, merged bool) error {
	dpath := filepath.Join(w.dst, filepath.FromSlash(rel))
	fi, err := os.Lstat(dpath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed while we looked
	}
	if err != nil {
		return fmt.Errorf("changes: %w", err)
	}
	var sfi fs.FileInfo
	if merged {
		sfi, err = os.Lstat(filepath.Join(w.src, filepath.FromSlash(rel)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("changes: %w", err)
		}
	}
	if isWhiteout(dpath, fi) {
		if sfi != nil {
			w.out = append(w.out, Change{Path: rel, Kind: Deleted, Type: typeOf(sfi.Mode()), OldType: typeOf(sfi.Mode()), OldMode: sfi.Mode() & modeBits})
		}
		return nil
	}
	c := Change{Path: rel, Type: typeOf(fi.Mode()), Mode: fi.Mode() & modeBits}
	if c.Type == TypeFile {
		c.Size = fi.Size()
	}
	if c.Type == TypeSymlink {
		if c.Target, err = os.Readlink(dpath); err != nil {
			return fmt.Errorf("changes: %w", err)
		}
	}
	if sfi == nil {
		c.Kind = Added
		w.out = append(w.out, c)
		if c.Type == TypeDir {
			return w.walk(rel, false, false)
		}
		return nil
	}
	spath := filepath.Join(w.src, filepath.FromSlash(rel))
	c.OldType, c.OldMode = typeOf(sfi.Mode()), sfi.Mode()&modeBits
	switch {
	case c.Type != c.OldType:
		c.Kind = TypeChanged
		if c.OldType == TypeSymlink {
			c.OldTarget, _ = os.Readlink(spath)
		}
	case c.Type == TypeDir:
		if isOpaque(dpath) {
			// Replaced when anything below differs from SRC's.
			c.Kind = DirReplaced
			at := len(w.out)
			w.out = append(w.out, c)
			if err := w.walk(rel, true, true); err != nil {
				return err
			}
			if len(w.out) == at+1 {
				w.out = w.out[:at]
				if c.Mode != c.OldMode {
					c.Kind = ModeChanged
					w.out = append(w.out, c)
				}
			}
			return nil
		}
		if c.Mode != c.OldMode {
			c.Kind = ModeChanged
		}
	case c.Type == TypeSymlink:
		if c.OldTarget, err = os.Readlink(spath); err != nil {
			return fmt.Errorf("changes: %w", err)
		}
		if c.Target != c.OldTarget {
			c.Kind = SymlinkChanged
		}
	case c.Type == TypeFile:
		same, err := w.sameContent(dpath, spath, fi.Size(), sfi.Size())
		if err != nil {
			return err
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
	if c.Kind != "" {
		w.out = append(w.out, c)
	}
	if c.Type == TypeDir {
		return w.walk(rel, c.OldType == TypeDir, false)
	}
	return nil
}

// sameContent tells whether files a and b hold the same bytes.
func (w *changeWalker) sameContent(a, b string, sa, sb int64) (bool, error) {
	if sa != sb {
		return false, nil
	}
	if sa == 0 {
		return true, nil
	}
	fa, err := os.Open(a)
	if err != nil {
		return false, fmt.Errorf("changes: %w", err)
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, fmt.Errorf("changes: %w", err)
	}
	defer fb.Close()
	if w.buf1 == nil {
		w.buf1, w.buf2 = make([]byte, 64<<10), make([]byte, 64<<10)
	}
	for {
		na, erra := io.ReadFull(fa, w.buf1)
		nb, errb := io.ReadFull(fb, w.buf2)
		if na != nb || !bytes.Equal(w.buf1[:na], w.buf2[:nb]) {
			return false, nil
		}
		if erra != nil || errb != nil {
			if (erra == io.EOF || erra == io.ErrUnexpectedEOF) && (errb == io.EOF || errb == io.ErrUnexpectedEOF) {
				return true, nil
			}
			if erra != nil && erra != io.EOF && erra != io.ErrUnexpectedEOF {
				return false, fmt.Errorf("changes: %w", erra)
			}
			if errb != nil && errb != io.EOF && errb != io.ErrUnexpectedEOF {
				return false, fmt.Errorf("changes: %w", errb)
			}
			return false, nil
		}
	}
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
