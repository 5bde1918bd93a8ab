package usage

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// DiskWalk measures the disk space of a directory tree that someone else may
// be changing, such as a sandbox's writable layer.
//
// It counts the blocks of the top directory and of every entry below it, a
// file with several links once, without following symbolic links. Each
// directory is opened beneath its parent with O_NOFOLLOW, so a directory
// swapped for a link during the walk leads nowhere outside.
//
// A directory of the walker's own whose mode keeps its owner out (0300, 0000)
// is lent read and search permission for the time of its walk, through a
// descriptor of that very directory, and given its mode back after. A
// directory it still cannot walk (another owner's, or one changed under it) is
// left out, and the walk says so (truncated).
type DiskWalk struct {
	// MaxEntries bounds the entries walked (0: no bound).
	MaxEntries int
	// MaxDepth bounds the levels of directories below the top walked
	// into, and so the descriptors held at once.
	MaxDepth int
	// Visit, if set, is called with each directory's descriptor before
	// its entries are read.
	Visit func(dirfd int)
}

// Size measures dir. truncated tells that it left something out: after
// MaxEntries entries, a directory deeper than MaxDepth, or one it could
// not walk.
func (o DiskWalk) Size(dir string) (bytes int64, truncated bool, err error) {
	w := diskWalk{o: o, left: o.MaxEntries, seen: map[[2]uint64]bool{}}
	if o.MaxEntries <= 0 {
		w.left = -1 // never reaches 0
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return 0, false, &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	fd, restore, err := openDir(unix.AT_FDCWD, dir, &st)
	if err != nil {
		return 0, false, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer restore()
	w.bytes += int64(st.Blocks) * 512
	w.dir(fd, 0)
	return w.bytes, w.full || w.deep || w.hidden, nil
}

type diskWalk struct {
	o      DiskWalk
	bytes  int64
	left   int                // entries still to walk; negative: no bound
	full   bool               // MaxEntries were walked and more were left
	deep   bool               // a directory deeper than MaxDepth was left out
	hidden bool               // a directory that could not be walked was left out
	seen   map[[2]uint64]bool // (device, inode) of files with several links
}

// dir adds the entries of the open directory fd, depth levels below the
// top, and closes it.
func (w *diskWalk) dir(fd, depth int) {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	if w.o.Visit != nil {
		w.o.Visit(fd)
	}
	for !w.full {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if w.left == 0 {
				w.full = true
				return
			}
			w.left--
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue // gone
			}
			isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
			if !isDir && st.Nlink > 1 {
				key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
				if w.seen[key] {
					continue
				}
				w.seen[key] = true
			}
			w.bytes += int64(st.Blocks) * 512
			if !isDir {
				continue
			}
			if depth >= w.o.MaxDepth {
				w.deep = true
				continue
			}
			sub, restore, err := openDir(fd, name, &st)
			if err != nil {
				if !errors.Is(err, unix.ENOENT) {
					w.hidden = true
				}
				continue
			}
			w.dir(sub, depth+1)
			restore()
		}
		if errors.Is(err, io.EOF) || (err != nil && len(names) == 0) {
			return
		}
	}
}
