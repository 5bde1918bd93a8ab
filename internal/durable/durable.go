// Package durable writes files and trees so that a process killed at any point
// leaves the old state or the new one.
//
// A file is written beside its place, synced and renamed into it. A tree is
// built in a temporary directory of the same file system. A later start can
// tell such a directory was abandoned, because its maker's lock is gone, and
// remove it.
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TempInfix follows the name of a file WriteFile writes in the name of
// its temporary file (".NAME.tmp-RANDOM").
const TempInfix = ".tmp-"

// WriteFile writes data to path (mode perm) atomically and durably: to a
// temporary file beside it, synced, renamed over path, and the directory
// synced.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+TempInfix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
}

// SyncDir makes the entries of directory dir (names made, renamed or
// removed in it) durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// Temp is a directory being built, locked by its maker until Close.
//
// A directory of the same prefix whose lock nobody holds was left by a process
// that died (see RemoveAbandoned).
type Temp struct {
	// Path is the directory.
	Path string
	lock *os.File
}

// TempDir makes a new directory in parent whose name starts with prefix
// (mode 0700), locked until Close.
func TempDir(parent, prefix string) (*Temp, error) {
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(dir)
	if err == nil {
		err = lockDir(f)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		_ = os.Remove(dir)
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return &Temp{Path: dir, lock: f}, nil
}

// Commit syncs the file system of the directory and renames it to path,
// which must not exist, then syncs path's parent. The directory stays
// locked until Close.
func (t *Temp) Commit(path string) error {
	if err := SyncFS(t.lock); err != nil {
		return fmt.Errorf("sync %s: %w", t.Path, err)
	}
	if err := os.Rename(t.Path, path); err != nil {
		return err
	}
	t.Path = path
	return SyncDir(filepath.Dir(path))
}

// Close releases the directory's lock; it does not remove it.
func (t *Temp) Close() {
	if t != nil && t.lock != nil {
		t.lock.Close()
		t.lock = nil
	}
}

// Abandoned lists the directories of parent whose names start with
// prefix and whose lock nobody holds: those of a process that died while
// building them.
func Abandoned(parent, prefix string) ([]string, error) {
	entries, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		if !Locked(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Locked tells whether a process holds the lock of directory dir (see
// TempDir); one that cannot be opened is taken as locked.
func Locked(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	return lockedDir(f)
}
