package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Limits of what inlineEtc copies instead of binding: small files and
// small trees.
const (
	inlineMaxBytes   = 256 << 10
	inlineMaxEntries = 32
)

// inlineEtc plans to copy into the root directory the small /etc files and
// trees among inline. It returns the mounts left to make, and the function
// that copies the others.
//
// inline are those the plan lets the starter copy (Plan.Inline): binds of the
// host's /etc entries onto themselves. A copy of a few kilobytes costs far
// less at every start than a mount by the runtime, and the root is mounted
// read-only, as the binds were.
//
// What a process in the sandbox sees is the same as with the binds: the
// content of the host's file when the sandbox started. (A bind, too, keeps the
// file that a host program later replaces by renaming a new one over it.) An
// entry that cannot be copied (unreadable, too large, special files) stays a
// bind. The spec that `boxsh spec` prints keeps the binds: it must work in any
// runtime and with any root.
//
// The copies may be made while the runtime sets the sandbox up, as long as
// they are done before its first process starts: the runtime only mounts the
// root, whose mount points for the entries are already there. copy reports the
// first entry it could not copy, which then stays empty.
func inlineEtc(mounts []specs.Mount, rootfs string, inline []string) (kept []specs.Mount, copy func() error) {
	type entry struct {
		src, dst string
		fi       os.FileInfo
	}
	var planned []entry
	kept = mounts[:0:0]
	for _, m := range mounts {
		// The read-only bind of a listed host entry onto itself, never
		// another bind at its place.
		if m.Type == "bind" && m.Source == m.Destination && slices.Contains(m.Options, "ro") && slices.Contains(inline, m.Destination) {
			dst := filepath.Join(rootfs, m.Destination)
			if fi, err := inlinable(m.Source, dst); err == nil {
				planned = append(planned, entry{m.Source, dst, fi})
				continue
			}
		}
		kept = append(kept, m)
	}
	return kept, func() error {
		// A few goroutines: the copies overlap the runtime's own work.
		errs := make([]error, len(planned))
		work := make(chan int)
		var wg sync.WaitGroup
		for range inlineWorkers {
			wg.Go(func() {
				for i := range work {
					e := planned[i]
					if e.fi.IsDir() {
						if errs[i] = copyTree(e.src, e.dst); errs[i] != nil {
							clearDir(e.dst)
						}
					} else {
						errs[i] = copyFile(e.src, e.dst, e.fi)
					}
					if errs[i] != nil {
						errs[i] = fmt.Errorf("copy %s into the sandbox's root: %w", e.src, errs[i])
					}
				}
			})
		}
		for i := range planned {
			work <- i
		}
		close(work)
		wg.Wait()
		return errors.Join(errs...)
	}
}

// inlineWorkers is the number of goroutines that copy for inlineEtc.
const inlineWorkers = 3

// errTooLarge stops a copy that is over the limits of inlineEtc.
var errTooLarge = errors.New("too large to inline")

// inlinable tells whether the host file or tree src can be copied to dst, and
// returns what src is.
//
// Symlinks at src are followed, as a bind does. prepareRootfs made dst as an
// empty file or directory.
func inlinable(src, dst string) (os.FileInfo, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	// dst must be what prepareRootfs made, never a symlink: writing
	// through one would write to the host.
	dfi, err := os.Lstat(dst)
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode().IsRegular() && dfi.Mode().IsRegular():
		if fi.Size() > inlineMaxBytes {
			return nil, errTooLarge
		}
		return fi, unix.Access(src, unix.R_OK)
	case fi.IsDir() && dfi.IsDir():
		budget, size := inlineMaxEntries, int64(0)
		return fi, smallTree(src, &budget, &size)
	}
	return nil, errTooLarge
}

// smallTree checks that the tree dir holds no more than *budget entries,
// of *size bytes at most in all, and only directories, regular files and
// symlinks. It reads no more names of a directory than the budget allows.
func smallTree(dir string, budget *int, size *int64) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(*budget + 1)
	d.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if *budget -= len(names); *budget < 0 {
		return errTooLarge
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode().IsRegular():
			if *size += fi.Size(); *size > inlineMaxBytes {
				return errTooLarge
			}
			if err := unix.Access(p, unix.R_OK); err != nil {
				return err
			}
		case fi.IsDir():
			if err := smallTree(p, budget, size); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink == 0:
			return errTooLarge
		}
	}
	return nil
}

// copyTree copies the directory tree src, checked by inlineEntry, into the
// existing directory dst.
//
// It copies directories, regular files and symlinks, with their permission
// bits; those of directories are set once their content is in.
func copyTree(src, dst string) error {
	type dirMode struct {
		path string
		mode fs.FileMode
	}
	var dirs []dirMode
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, dirMode{target, info.Mode().Perm()})
			if rel == "." {
				return nil
			}
			return os.Mkdir(target, 0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(p, target, info)
		default:
			return errTooLarge
		}
	})
	for i := len(dirs) - 1; i >= 0 && err == nil; i-- {
		err = os.Chmod(dirs[i].path, dirs[i].mode)
	}
	return err
}

// copyFile copies the regular file src of size, mode and time fi to dst,
// never through a symlink at dst.
func copyFile(src, dst string, fi os.FileInfo) error {
	if fi.Size() > inlineMaxBytes {
		return errTooLarge
	}
	// O_NONBLOCK: should src have become a FIFO, do not wait for a writer.
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(in, inlineMaxBytes+1))
	in.Close()
	if err != nil {
		return err
	}
	if len(b) > inlineMaxBytes {
		return errTooLarge
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	mtime := unix.NsecToTimeval(fi.ModTime().UnixNano())
	_, err = out.Write(b)
	if err == nil {
		err = out.Chmod(fi.Mode().Perm())
	}
	if err == nil {
		err = unix.Futimes(int(out.Fd()), []unix.Timeval{mtime, mtime})
	}
	if err != nil {
		_ = out.Truncate(0)
	}
	return err
}

// clearDir removes what a failed copy left in the directory dir.
func clearDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
