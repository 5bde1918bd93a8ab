package files

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// procFD tells whether /proc/self/fd exists, through which an unnamed file
// is given a name (linkat of an O_TMPFILE file needs it without
// CAP_DAC_READ_SEARCH).
var procFD = sync.OnceValue(func() bool {
	fi, err := os.Stat("/proc/self/fd")
	return err == nil && fi.IsDir()
})

// createUnnamed makes an unnamed regular file in dir (O_TMPFILE).
//
// Nothing of it is visible in dir until linkUnnamed names it, so a write
// interrupted at any point, boxsh-init killed included, leaves nothing behind.
// It returns errors.ErrUnsupported where the file system (an overlay before
// Linux 6.6, say) or the kernel cannot make one.
func createUnnamed(dir string) (*os.File, error) {
	if !procFD() {
		return nil, errors.ErrUnsupported
	}
	f, err := os.OpenFile(dir, unix.O_TMPFILE|os.O_WRONLY, 0o600)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && (pe.Err == unix.EOPNOTSUPP || pe.Err == unix.EISDIR || pe.Err == unix.EINVAL) {
			return nil, errors.ErrUnsupported
		}
		return nil, err
	}
	return f, nil
}

// linkUnnamed gives the unnamed file f the name path, which must not
// exist (unix.EEXIST if it does).
func linkUnnamed(f *os.File, path string) error {
	src := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if err := unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW); err != nil {
		return &os.LinkError{Op: "link", Old: src, New: path, Err: err}
	}
	return nil
}

// holdInode holds the inode of path, if there is one, until the release it
// returns, which lets it go in the background.
//
// A file replaced by a rename is freed when the rename drops its last name,
// unless something holds it. Freeing gives its blocks back, which takes time.
// A held file is freed as the hold is released, once the call has been
// answered. O_PATH holds the inode without opening it for reading or writing:
// no permission is needed, and nothing happens to the file.
func holdInode(path string) (release func()) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return func() {}
	}
	return func() { go unix.Close(fd) }
}

// writeChunk is how much of a large file writeOut writes before it
// starts writing it back.
const writeChunk = 2 << 20

// writeOut writes data to the new file f. Of a large file it starts the
// write-back to the disk of each chunk once written (sync_file_range, a
// hint), so that the fsync that follows has less to wait for.
func writeOut(f *os.File, data []byte) error {
	if len(data) <= writeChunk {
		_, err := f.Write(data)
		return err
	}
	fd := int(f.Fd())
	for off := 0; off < len(data); off += writeChunk {
		end := min(off+writeChunk, len(data))
		if _, err := f.Write(data[off:end]); err != nil {
			return err
		}
		_ = unix.SyncFileRange(fd, int64(off), int64(end-off), unix.SYNC_FILE_RANGE_WRITE)
	}
	return nil
}
