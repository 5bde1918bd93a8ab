package host

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CowForeignFiles lists the entries under dir (a cow bind's DST, itself
// included) that the current user does not own, by path. Nothing a
// sandboxed command makes there belongs to anyone else, so such an entry
// was put there by another user of the host (when DST was open to others,
// see cowGuard), and applying DST to SRC must refuse it rather than carry
// it into the user's files. A walk error is returned with what was found
// until then.
func CowForeignFiles(dir string) ([]string, error) {
	uid := os.Getuid()
	var foreign []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
			foreign = append(foreign, p)
		}
		return nil
	})
	return foreign, err
}
