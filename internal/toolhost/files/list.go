package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/boxsh/boxsh/internal/tool"
)

// List limits: the entries a list call returns by default and at most.
const (
	DefaultListLimit = 1000
	MaxListLimit     = 10000
)

// DeniedBy names the policy rule that refuses reading the object at an
// absolute path, or returns "". The tool host passes one built from the
// sandbox's rules.
type DeniedBy func(abs string) string

// List runs the list tool: the entries of a directory, depth first in lexical
// order.
//
// It goes down to args.Depth levels, and lists at most args.Limit entries.
// Symbolic links are reported, never followed. An entry that deniedBy names a
// rule for is reported as it is seen (the sandbox's placeholder), and marked
// with the rule.
func List(ctx context.Context, args tool.ListArgs, deniedBy DeniedBy) tool.Result {
	if args.Depth < 0 || args.Limit < 0 {
		// The front's schema check refuses these; never trust it alone.
		return tool.Errorf("list: depth and limit must be at least 0 (got %d and %d)", args.Depth, args.Limit)
	}
	path, fi, err := resolve(args.Path)
	if err != nil {
		return tool.Errorf("list: cannot open directory: %s: %s", args.Path, tool.ErrorText(err))
	}
	if !fi.IsDir() {
		return tool.Errorf("list: cannot open directory: %s: not a directory", args.Path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return tool.Errorf("list: %s: %s", args.Path, tool.ErrorText(err))
	}
	w := &walker{ctx: ctx, deniedBy: deniedBy, depth: max(args.Depth, 1), limit: args.Limit,
		out: tool.ListOutput{Path: abs, Entries: []tool.ListEntry{}}}
	if w.limit == 0 {
		w.limit = DefaultListLimit
	}
	w.limit = min(w.limit, MaxListLimit)
	// Rules name real paths: match them against the directory's.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		real = abs
	}
	entries, err := readDir(abs)
	if err != nil {
		return tool.Errorf("list: cannot open directory: %s: %s", args.Path, tool.ErrorText(err))
	}
	if err := w.walk(abs, real, "", entries, 1); err != nil && !errors.Is(err, errFull) {
		return tool.Errorf("list: %s: %v", args.Path, err)
	}
	return tool.StructuredResult(w.out)
}

// walker is the state of one List.
type walker struct {
	ctx          context.Context
	deniedBy     DeniedBy
	depth, limit int
	out          tool.ListOutput
}

// errFull stops a walk that reached its limit.
var errFull = errors.New("list limit reached")

// walk adds the entries of the directory at dir, and those below them down to
// w.depth.
//
// real is dir's path with symbolic links resolved, and rel its name relative
// to the listed one.
func (w *walker) walk(dir, real, rel string, entries []fs.DirEntry, level int) error {
	for _, e := range entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if len(w.out.Entries) == w.limit {
			w.out.Truncated = true
			return errFull
		}
		name := e.Name()
		entry := tool.ListEntry{Name: joinRel(rel, name)}
		childReal := filepath.Join(real, name)
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the directory was read
			}
			return fmt.Errorf("%s: %s", entry.Name, tool.ErrorText(err))
		}
		entry.FileInfo = Info(filepath.Join(dir, name), fi, w.denied(childReal))
		w.out.Entries = append(w.out.Entries, entry)
		if !fi.IsDir() || level >= w.depth {
			continue
		}
		i := len(w.out.Entries) - 1
		children, err := readDir(filepath.Join(dir, name))
		if err != nil {
			w.out.Entries[i].Error = tool.ErrorText(err)
			continue
		}
		if err := w.walk(filepath.Join(dir, name), childReal, entry.Name, children, level+1); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) denied(real string) string {
	if w.deniedBy == nil {
		return ""
	}
	return w.deniedBy(real)
}

// readDir reads a directory's entries, sorted by name.
func readDir(dir string) ([]fs.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int {
		switch {
		case a.Name() < b.Name():
			return -1
		case a.Name() > b.Name():
			return 1
		}
		return 0
	})
	return entries, nil
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// Info describes the object at path, whose Lstat answer fi is, for list
// and stat.
func Info(path string, fi fs.FileInfo, deniedBy string) tool.FileInfo {
	info := tool.FileInfo{
		Type:     tool.FileType(fi.Mode()),
		Size:     fi.Size(),
		Mode:     modeString(fi.Mode()),
		Mtime:    fi.ModTime().UTC().Format(time.RFC3339Nano),
		DeniedBy: deniedBy,
	}
	if info.Type == tool.FileTypeSymlink {
		info.Target, _ = os.Readlink(path)
	}
	return info
}

// modeString is the permission bits of m in octal, with the set-user-ID,
// set-group-ID and sticky bits, as chmod takes them.
func modeString(m fs.FileMode) string {
	bits := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		bits |= 0o1000
	}
	return fmt.Sprintf("%04o", bits)
}
