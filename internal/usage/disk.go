package usage

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Disk is the space that the tree of dir uses below it: the blocks of
// every entry (a file with several links once), without following
// symbolic links. Each directory is opened beneath its parent with
// O_NOFOLLOW, so that a directory swapped for a link while Disk walks
// leads nowhere outside. It stops after max entries (truncated).
// Directories it cannot open are left out, and so are those deeper than
// maxDepth (truncated), which bounds the descriptors it holds.
func Disk(dir string, max int) (bytes int64, truncated bool, err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	w := diskWalk{left: max, seen: map[[2]uint64]bool{}}
	w.dir(fd, 0)
	return w.bytes, w.left < 0 || w.deep, nil
}

type diskWalk struct {
	bytes int64
	left  int
	deep  bool               // a directory deeper than maxDepth was left out
	seen  map[[2]uint64]bool // (device, inode) of files with several links
}

// maxDepth bounds how deep Disk goes.
const maxDepth = 64

// dir adds the entries of the open directory fd, depth levels below the
// top, which it closes.
func (w *diskWalk) dir(fd, depth int) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	for w.left >= 0 {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if w.left--; w.left < 0 {
				return
			}
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue // gone
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
				key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
				if w.seen[key] {
					continue
				}
				w.seen[key] = true
			}
			w.bytes += int64(st.Blocks) * 512
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				if depth >= maxDepth {
					w.deep = true
					continue
				}
				if sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
					w.dir(sub, depth+1)
				}
			}
		}
		if errors.Is(err, io.EOF) || (err != nil && len(names) == 0) {
			return
		}
	}
}
