package session

import (
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/fsfd"
)

// unlockDirs gives the owner rwx on the directory path and every directory
// below it.
//
// Each is opened beneath its parent without following a link. A directory its
// owner may not enter is changed through a descriptor of its own (O_PATH).
// What cannot be opened is left as it is.
func unlockDirs(path string) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		unlockDir(fd)
	}
}

// unlockDir is unlockDirs of the O_PATH descriptor pfd, which it closes.
func unlockDir(pfd int) {
	defer unix.Close(pfd)
	var st unix.Stat_t
	if unix.Fstat(pfd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return
	}
	if st.Mode&0o700 != 0o700 {
		_ = fsfd.Chmod(pfd, st.Mode&0o7777|0o700)
	}
	fd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	ents, err := readDirents(fd)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.typ != unix.DT_DIR && e.typ != unix.DT_UNKNOWN {
			continue
		}
		if sub, err := unix.Openat(fd, e.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			unlockDir(sub)
		}
	}
}
