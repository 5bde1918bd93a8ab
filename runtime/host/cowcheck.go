package host

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CowForeignFiles lists, by path, the entries under dir that the current user
// does not own.
//
// dir is a cow bind's DST, and is itself included. Nothing a sandboxed command
// makes there belongs to anyone else. So such an entry was put there by
// another user of the host, when DST was open to others. Applying DST to SRC
// must refuse it rather than carry it into the user's files. A walk error is
// returned with what was found until then.
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
