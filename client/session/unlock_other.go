//go:build !linux

package session

import (
	"io/fs"
	"os"
	"path/filepath"
)

// unlockDirs gives the owner rwx on the directory path and every
// directory below it (symbolic links are not followed).
func unlockDirs(path string) {
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
}
