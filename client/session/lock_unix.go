//go:build unix

package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockSession takes the session lock of dir for a server's life: an exclusive
// flock of LockFile in dir.
//
// Close releases it, and so does the kernel when the holder dies. It returns
// ErrInUse when another holds it.
func lockSession(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("session lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrInUse
		}
		return nil, fmt.Errorf("session lock: %w", err)
	}
	return f, nil
}

// sessionLocked tells whether a server holds the session lock of dir.
func sessionLocked(dir string) bool {
	f, err := os.Open(filepath.Join(dir, LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true // cannot tell: treat it as in use
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) == unix.EWOULDBLOCK
}
