package session

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/boxsh/boxsh/internal/pathtree"
)

// maxDiffFile is the largest file Diff compares line by line.
const maxDiffFile = 8 << 20

// Diff returns the unified diff of the session's changes at path.
//
// path is a file, or a directory and what is below it; "" means every change.
func (s *Session) Diff(path string) (string, error) {
	return Diff(s.info.Src, s.info.Dst, path)
}

// Diff returns the unified diff of the changes of the upper directory dst over
// src at path ("" for all).
//
// In the diff, a/ is SRC and b/ is DST. Binary files and files over 8 MiB are
// named, not compared. Mode changes and symbolic links are shown as git shows
// them, and names are quoted as git quotes them (QuotePath).
func Diff(src, dst, path string) (string, error) {
	changes, err := Changes(src, dst)
	if err != nil {
		return "", err
	}
	path = cleanRel(path)
	var b strings.Builder
	found := false
	for _, c := range changes {
		if path != "" && !pathtree.Within(c.Path, path) {
			continue
		}
		found = true
		if err := diffOne(&b, src, dst, c); err != nil {
			return "", err
		}
	}
	if !found && path != "" {
		return "", fmt.Errorf("diff: no change at %s", QuotePath(path))
	}
	return b.String(), nil
}

// diffOne writes the diff of one change.
func diffOne(b *strings.Builder, src, dst string, c Change) error {
	// Names are quoted as git quotes them, prefix included.
	a, bb := QuotePath("a/"+c.Path), QuotePath("b/"+c.Path)
	if c.Kind == ModeChanged || (c.Kind == Modified && c.Mode != c.OldMode) {
		fmt.Fprintf(b, "diff %s %s\nold mode %s\nnew mode %s\n", a, bb, modeString(c.OldMode), modeString(c.Mode))
	}
	var before, after string
	var binary bool
	side := func(root string, typ FileType) (string, error) {
		switch typ {
		case TypeSymlink:
			t, err := readlinkNoFollow(root, c.Path)
			return t + "\n", err
		case TypeFile:
			// What the sandbox wrote is read without following a link,
			// so that a link it swapped in cannot show another file.
			data, err := readNoFollow(root, c.Path, maxDiffFile)
			if errors.Is(err, errTooLarge) {
				binary = true
				return "", nil
			}
			if err != nil {
				return "", err
			}
			if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
				binary = true
			}
			return string(data), nil
		}
		return "", nil
	}
	var err error
	oldType, newType := c.OldType, c.Type
	switch c.Kind {
	case ModeChanged:
		return nil
	case Deleted:
		newType = ""
		if oldType == TypeDir {
			fmt.Fprintf(b, "deleted directory %s\n", QuotePath(c.Path+"/"))
			return nil
		}
	case Added:
		oldType = ""
		if newType == TypeDir {
			fmt.Fprintf(b, "new directory %s\n", QuotePath(c.Path+"/"))
			return nil
		}
	case DirReplaced:
		fmt.Fprintf(b, "replaced directory %s\n", QuotePath(c.Path+"/"))
		return nil
	case TypeChanged:
		fmt.Fprintf(b, "%s: %s replaced by %s\n", QuotePath(c.Path), oldType, newType)
	}
	if before, err = side(src, oldType); err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	if after, err = side(dst, newType); err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	if oldType == "" {
		a = "/dev/null"
	}
	if newType == "" {
		bb = "/dev/null"
	}
	if binary {
		fmt.Fprintf(b, "Binary files %s and %s differ\n", a, bb)
		return nil
	}
	b.WriteString(udiff.Unified(a, bb, before, after))
	return nil
}
