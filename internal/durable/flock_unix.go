//go:build unix

package durable

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive lock of the open directory f (flock(2)),
// held until f is closed or its process dies.
func lockDir(f *os.File) error { return flock(f, unix.LOCK_EX) }

// lockedDir tells whether another open file holds the lock of f.
func lockedDir(f *os.File) bool { return flock(f, unix.LOCK_SH|unix.LOCK_NB) != nil }

// flock is flock(2) on f, retried on EINTR.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}
