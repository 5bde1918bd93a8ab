package session

import (
	"bufio"
	"bytes"
	"encoding/binary"
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

// fileState is what a session records of each path of SRC when it starts, to
// tell later whether the host changed it.
//
// A file was changed when its inode, size, modification or change time
// differs. The kernel sets the change time on every write, rename or chmod,
// and a program cannot set it back. A directory was changed when its type or
// mode differs.
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

// manifestMagic starts a saved manifest (and names its format's version).
const manifestMagic = "boxsh-manifest 1\n"

// save writes the manifest to path atomically.
//
// After manifestMagic, each path has its length and bytes (any bytes: a path
// need not be UTF-8), then the inode, size, mtime, ctime and mode, as varints.
func (m manifest) save(path string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	_, err = w.WriteString(manifestMagic)
	var buf []byte
	for rel, st := range m {
		buf = binary.AppendUvarint(buf[:0], uint64(len(rel)))
		buf = append(buf, rel...)
		buf = binary.AppendUvarint(buf, st.Ino)
		buf = binary.AppendVarint(buf, st.Size)
		buf = binary.AppendVarint(buf, st.Mtime)
		buf = binary.AppendVarint(buf, st.Ctime)
		buf = binary.AppendUvarint(buf, uint64(st.Mode))
		if err == nil {
			_, err = w.Write(buf)
		}
	}
	if err == nil {
		err = w.Flush()
	}
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
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("session manifest: %w", err)
	}
	bad := func(what string) (manifest, error) {
		return nil, fmt.Errorf("session manifest %s: %s", path, what)
	}
	rest, ok := bytes.CutPrefix(b, []byte(manifestMagic))
	if !ok {
		return bad("not a manifest of this version")
	}
	m := manifest{}
	uvarint := func() uint64 {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			ok = false
			return 0
		}
		rest = rest[n:]
		return v
	}
	varint := func() int64 {
		v, n := binary.Varint(rest)
		if n <= 0 {
			ok = false
			return 0
		}
		rest = rest[n:]
		return v
	}
	for len(rest) > 0 {
		n := uvarint()
		if !ok || n > uint64(len(rest)) {
			return bad("truncated")
		}
		rel := string(rest[:n])
		rest = rest[n:]
		st := fileState{Ino: uvarint(), Size: varint(), Mtime: varint(), Ctime: varint(), Mode: fs.FileMode(uvarint())}
		if !ok {
			return bad("truncated")
		}
		m[rel] = st
	}
	return m, nil
}
