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

// createUnnamed makes an unnamed regular file in dir (O_TMPFILE): nothing
// of it is visible in dir until linkUnnamed names it, so a write
// interrupted at any point, boxsh-init killed included, leaves nothing
// behind. It returns errors.ErrUnsupported where the file system (an
// overlay before Linux 6.6, say) or the kernel cannot make one.
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
