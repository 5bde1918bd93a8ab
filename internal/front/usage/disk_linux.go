package usage

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/fsfd"
)

// ownerWalk is the permission a walk needs of a directory: read and search.
const ownerWalk = unix.S_IRUSR | unix.S_IXUSR

// openDir opens directory name beneath parent for reading, without
// following a link, where st (its Lstat) says it is. One whose mode keeps
// its owner, the walker, out is lent ownerWalk through a descriptor of
// that directory (never by name, which could meanwhile name a link), and
// restore gives it its mode back unless someone changed it meanwhile.
func openDir(parent int, name string, st *unix.Stat_t) (fd int, restore func(), err error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	own := int(st.Uid) == unix.Geteuid()
	fd, err = unix.Openat(parent, name, flags, 0)
	switch {
	case err == nil && (!own || st.Mode&ownerWalk == ownerWalk):
		return fd, func() {}, nil
	case err == nil:
		unix.Close(fd) // readable, not searchable (0600): lend search too
	case !errors.Is(err, unix.EACCES):
		return -1, nil, err
	case !own:
		return -1, nil, err
	}
	path, err := unix.Openat(parent, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	var now unix.Stat_t
	if err := unix.Fstat(path, &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(path)
		return -1, nil, unix.ENOENT // replaced meanwhile
	}
	mode := uint32(now.Mode & 0o7777)
	lent := mode | ownerWalk
	if err := fsfd.Chmod(path, lent); err != nil {
		unix.Close(path)
		return -1, nil, err
	}
	restore = func() {
		var cur unix.Stat_t
		if unix.Fstat(path, &cur) == nil && uint32(cur.Mode&0o7777) == lent {
			_ = fsfd.Chmod(path, mode)
		}
		unix.Close(path)
	}
	fd, err = unix.Openat(path, ".", flags, 0)
	if err != nil {
		restore()
		return -1, nil, err
	}
	return fd, restore, nil
}
