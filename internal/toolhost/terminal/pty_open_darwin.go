package terminal

import (
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// openPTY opens a pseudo-terminal, tolerating failures of grantpt and
// unlockpt (see openWith).
func openPTY() (master, tty *os.File, err error) {
	return openWith(ptyOps{
		openMaster: func() (*os.File, error) {
			fd, err := syscall.Open("/dev/ptmx", syscall.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
			if err != nil {
				return nil, err
			}
			return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
		},
		name: func(f *os.File) (string, error) {
			var buf [128]byte // _IOC_PARM_LEN(TIOCPTYGNAME)
			if err := ioctl(f, syscall.TIOCPTYGNAME, uintptr(unsafe.Pointer(&buf[0]))); err != nil {
				return "", err
			}
			for i, c := range buf {
				if c == 0 {
					return string(buf[:i]), nil
				}
			}
			return "", errors.New("TIOCPTYGNAME: name not NUL-terminated")
		},
		grant:   func(f *os.File) error { return ioctl(f, syscall.TIOCPTYGRANT, 0) },
		unlock:  func(f *os.File) error { return ioctl(f, syscall.TIOCPTYUNLK, 0) },
		openTTY: func(name string) (*os.File, error) { return os.OpenFile(name, os.O_RDWR|syscall.O_NOCTTY, 0) },
	})
}

func ioctl(f *os.File, req, arg uintptr) error {
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, arg)
	if errno != 0 {
		return errno
	}
	return nil
}
