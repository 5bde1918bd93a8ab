package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// checkOwnDir checks that dir, if it exists, is a directory of the user's own
// and not a symlink.
//
// boxsh writes into the directories of a bundle, which an earlier sandbox may
// have been able to write in. It must never write to a host file through a
// link left there.
func checkOwnDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink: refusing to write through it", dir)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s is not owned by the user (uid %d): refusing to write into it", dir, st.Uid)
	}
	return nil
}

// resetDir makes dir an empty directory of mode 0755, removing what is
// there first without following symlinks (dir itself must not be one, see
// checkOwnDir). Directories of mode 0 in it (a previous run's denied-dir
// placeholder) are made removable first.
func resetDir(dir string) error {
	if err := checkOwnDir(dir); err != nil {
		return err
	}
	if _, err := os.Lstat(dir); err == nil {
		if err := removeTree(dir); err != nil {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
	}
	return os.Mkdir(dir, 0o755)
}

// removeTree removes the tree dir, which is not a symlink, as os.RemoveAll
// does.
//
// It first gives the user rwx on its directories, never through a symlink:
// WalkDir does not follow them, and names them by their own type.
func removeTree(dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Before WalkDir reads it: a mode-0 directory is unreadable.
			return os.Chmod(p, 0o700)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// createFile makes the file p, which must not exist (nor be a symlink),
// with content and mode perm.
func createFile(p string, content []byte, perm os.FileMode) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirBeneath makes the directory root/rel and those above it up to root, as
// os.MkdirAll does.
//
// It refuses a symlink or non-directory on the way: a link left in a reused
// root would make it create directories on the host.
func mkdirBeneath(root, rel string) error {
	p := root
	for _, name := range splitPath(rel) {
		p = filepath.Join(p, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if fi, err = os.Lstat(p); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink: refusing to write through it", p)
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory", p)
		}
	}
	return nil
}

// splitPath splits the slash-separated path rel into its names.
func splitPath(rel string) []string {
	var names []string
	for _, n := range strings.Split(filepath.Clean("/"+rel), "/") {
		if n != "" {
			names = append(names, n)
		}
	}
	return names
}
