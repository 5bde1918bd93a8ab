//go:build darwin

package session

import (
	"io/fs"
	"syscall"
)

// inodeCtime are fi's inode number and change time (ns).
func inodeCtime(fi fs.FileInfo) (uint64, int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(st.Ino), st.Ctimespec.Sec*1e9 + st.Ctimespec.Nsec
}

// ownerRdev are fi's owner and device number.
func ownerRdev(fi fs.FileInfo) (uid uint32, rdev uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 1
	}
	return st.Uid, uint64(st.Rdev)
}
