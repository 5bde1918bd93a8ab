package session

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// inodeCtime are fi's inode number and change time (ns).
func inodeCtime(fi fs.FileInfo) (uint64, int64) {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return st.Ino, st.Ctim.Sec*1e9 + st.Ctim.Nsec
	case *unix.Stat_t:
		return st.Ino, st.Ctim.Sec*1e9 + st.Ctim.Nsec
	}
	return 0, 0
}

// ownerRdev are fi's owner and device number.
func ownerRdev(fi fs.FileInfo) (uid uint32, rdev uint64) {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return st.Uid, st.Rdev
	case *unix.Stat_t:
		return st.Uid, st.Rdev
	}
	return 0, 1
}
