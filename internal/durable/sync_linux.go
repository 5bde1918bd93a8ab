package durable

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS writes back the file system that holds f (syncfs(2)): every file
// of a tree just built at once.
func SyncFS(f *os.File) error {
	return unix.Syncfs(int(f.Fd()))
}
