package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// PollableInput returns a reader of f (stdin) that waits for input in the
// runtime's network poller instead of in a blocking read.
//
// A goroutine waiting for the next message then holds no scheduler P. So the
// process can run on one P without a wake-up, such as the answer on another
// descriptor, waiting for the runtime's monitor to take the P back from the
// blocked read. ok is false, and f is returned, when f cannot be waited for
// that way: a regular file, which never blocks.
//
// f's descriptor keeps its flags. Making it non-blocking would change the open
// file description it shares with other processes: the shell that started
// boxsh, or its stdout when both are one socket. Instead an epoll instance of
// its own watches it. That instance, which no one else sees, is non-blocking
// and in the poller. A read is made once the descriptor is readable, so it
// returns at once with what is there.
func PollableInput(f *os.File) (r io.Reader, ok bool) {
	sc, err := f.SyscallConn()
	if err != nil {
		return f, false
	}
	fd := -1
	if err := sc.Control(func(d uintptr) { fd = int(d) }); err != nil || fd < 0 {
		return f, false
	}
	p, err := newPollReader(fd)
	if err != nil {
		return f, false
	}
	return p, true
}

// pollReader reads a descriptor once an epoll instance of its own says it
// is readable.
type pollReader struct {
	fd int
	// noWaitOff is set once fd has refused a read with RWF_NOWAIT.
	noWaitOff bool
	ep        *os.File // the epoll instance, in the runtime's poller
	rc        syscall.RawConn
}

// newPollReader watches fd with a new epoll instance (which fails for a
// regular file: EPERM).
func newPollReader(fd int) (*pollReader, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		_ = unix.Close(ep)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		_ = unix.Close(ep)
		return nil, fmt.Errorf("epoll instance: %w", err)
	}
	f := os.NewFile(uintptr(ep), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &pollReader{fd: fd, ep: f, rc: rc}, nil
}

// Read waits for the descriptor to be readable (data, its end, or an
// error), in the poller, then reads it.
func (p *pollReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var events [1]unix.EpollEvent
	var werr error
	err := p.rc.Read(func(ep uintptr) bool {
		// Without waiting: told to the runtime, it would wake its monitor
		// at every message (see nowait_linux.go).
		n, e := rawEpollPoll(int(ep), events[:])
		if e == unix.EINTR {
			return false
		}
		if e != 0 {
			werr = e
		}
		return n > 0 || e != 0
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return 0, fmt.Errorf("wait for input: %w", err)
	}
	if !p.noWaitOff {
		switch n, e := rawReadNoWait(p.fd, b); e {
		case 0:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case unix.EAGAIN:
			// Another reader took the data first: wait again.
			return p.Read(b)
		case unix.EOPNOTSUPP, unix.EINVAL, unix.ESPIPE, unix.ENOSYS:
			p.noWaitOff = true // read as below from now on
		}
		// EINTR and faults: the read below retries or reports them.
	}
	for {
		n, err := unix.Read(p.fd, b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			// A descriptor made non-blocking by another process, whose
			// reader took the data first: wait again.
			return p.Read(b)
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: "stdin", Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
