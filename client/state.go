package client

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// FileType is the type of a file in a change.
type FileType string

// File types.
const (
	TypeFile    FileType = "file"
	TypeDir     FileType = "dir"
	TypeSymlink FileType = "symlink"
	TypeOther   FileType = "other" // devices, fifos, sockets
)

// typeOf is the FileType of mode m.
func typeOf(m fs.FileMode) FileType {
	switch {
	case m.IsRegular():
		return TypeFile
	case m.IsDir():
		return TypeDir
	case m&fs.ModeSymlink != 0:
		return TypeSymlink
	}
	return TypeOther
}

// modeBits are the mode bits a change compares and applies.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// fileState is what a session records of each path of SRC when it
// starts, to tell later whether the host changed it: a file whose inode,
// size, modification or change time differs was changed (the change time
// is set by the kernel on every write, rename or chmod and cannot be set
// back by a program), and so was a directory whose type or mode differs.
type fileState struct {
	Ino   uint64
	Size  int64
	Mtime int64 // ns
	Ctime int64 // ns
	Mode  fs.FileMode
}

// stateOf is the fileState of fi.
func stateOf(fi fs.FileInfo) fileState {
	ino, ctime := inodeCtime(fi)
	return fileState{Ino: ino, Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Ctime: ctime, Mode: fi.Mode()}
}

// same tells whether a path recorded as s is still as it was (t).
func (s fileState) same(t fileState) bool {
	if typeOf(s.Mode) != typeOf(t.Mode) || s.Mode&modeBits != t.Mode&modeBits {
		return false
	}
	if typeOf(s.Mode) == TypeDir {
		return true
	}
	return s == t
}

// manifest maps SRC's relative slash paths ("." for SRC itself) to their
// state when the session started.
type manifest map[string]fileState

// takeManifest records the state of every path under root, without
// following symbolic links.
func takeManifest(root string) (manifest, error) {
	m := manifest{}
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, err
	}
	m["."] = stateOf(fi)
	err = walkStates(root, "", func(rel string, st fileState) error {
		m[rel] = st
		return nil
	})
	return m, err
}

// walkStates calls fn for every path below root/rel (rel "" for root),
// parents before children, names sorted.
func walkStates(root, rel string, fn func(rel string, st fileState) error) error {
	dir := filepath.Join(root, filepath.FromSlash(rel))
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	sort.Strings(names)
	for _, name := range names {
		crel := name
		if rel != "" {
			crel = rel + "/" + name
		}
		fi, err := os.Lstat(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return err
		}
		if err := fn(crel, stateOf(fi)); err != nil {
			return err
		}
		if fi.IsDir() {
			// A directory that cannot be read, or is gone, is recorded
			// without its contents: a path below it is then unknown, and
			// Apply refuses to change it.
			err := walkStates(root, crel, fn)
			if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
				return err
			}
		}
	}
	return nil
}

// save writes the manifest to path atomically.
func (m manifest) save(path string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = gob.NewEncoder(f).Encode(m)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save manifest: %w", err)
	}
	return nil
}

// loadManifest reads a manifest saved by save.
func loadManifest(path string) (manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("session manifest: %w", err)
	}
	defer f.Close()
	var m manifest
	if err := gob.NewDecoder(f).Decode(&m); err != nil {
		return nil, fmt.Errorf("session manifest %s: %w", path, err)
	}
	return m, nil
}
