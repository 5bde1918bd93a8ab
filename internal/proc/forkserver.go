package proc

import (
	"os"
	"path/filepath"
)

// ForkServerName is the file name of the fork-server library from which
// boxsh-init's bash pool clones its shells (internal/toolhost/bash/zygote). It is
// installed beside boxsh-init, or in ../lib/boxsh from it.
const ForkServerName = "boxsh-zygote.so"

// FindForkServer returns the fork-server library that belongs to the
// boxsh-init executable initPath (a link to it counts as where it links
// to), or "" if there is none.
func FindForkServer(initPath string) string {
	if real, err := filepath.EvalSymlinks(initPath); err == nil {
		initPath = real
	}
	dir := filepath.Dir(initPath)
	for _, p := range []string{
		filepath.Join(dir, ForkServerName),
		filepath.Join(dir, "..", "lib", "boxsh", ForkServerName),
	} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return filepath.Clean(p)
		}
	}
	return ""
}
