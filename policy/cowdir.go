package policy

import (
	"fmt"
	"os"
	"path/filepath"
)

// CowWorkDir returns the overlay work directory of a cow bind whose DST is
// dst.
//
// As in boxsh v3, it is <parent of DST>/.boxsh/<name of DST>. That is on the
// same file system as DST and the same for every run on DST, so two sandboxes
// cannot use one DST at once: overlayfs refuses a work directory in use.
//
// When the parent is a directory every user may create entries in (SharedDir:
// /tmp, /var/tmp), it is <parent>/.boxsh-UID/<name of DST> instead, where UID
// is the caller's user id. That directory is the caller's own, so what another
// user made there can neither break nor redirect it. The runtime checks the
// directory before use.
func CowWorkDir(dst string) string {
	return filepath.Join(CowWorkParent(filepath.Dir(dst)), filepath.Base(dst))
}

// CowWorkParent is the directory that holds the cow work directories of
// the DSTs in parent (see CowWorkDir).
func CowWorkParent(parent string) string {
	if SharedDir(parent) {
		return filepath.Join(parent, fmt.Sprintf(".boxsh-%d", os.Getuid()))
	}
	return filepath.Join(parent, ".boxsh")
}

// SharedDir tells whether dir is a sticky directory that other users may
// create entries in.
//
// The sticky bit keeps them from renaming or removing one another's
// entries. Examples are /tmp, /var/tmp and /dev/shm.
func SharedDir(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir() && fi.Mode()&os.ModeSticky != 0 && fi.Mode().Perm()&0o022 != 0
}
