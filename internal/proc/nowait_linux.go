package proc

import (
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The front's hot path (a request on stdin, its frame to boxsh-init, the
// reply, the answer on stdout) makes its system calls without telling the
// runtime, where they cannot block. Each call the runtime is told of wakes
// its monitor thread (sysmon) when the process was idle, as it is between
// calls: a futex wake and the monitor's run on the other core, for every
// message (see docs/perf.md). A call that cannot block needs neither.

// rawReadNoWait reads into b from fd with preadv2(RWF_NOWAIT) at the file's
// position, a read that returns EAGAIN instead of waiting, whatever the
// descriptor's flags (pipes and sockets honour it).
func rawReadNoWait(fd int, b []byte) (int, unix.Errno) {
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	n, _, e := unix.RawSyscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1, ^uintptr(0), ^uintptr(0), unix.RWF_NOWAIT)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// rawWriteNoWait writes b to fd with pwritev2(RWF_NOWAIT) at the file's
// position (see rawReadNoWait).
func rawWriteNoWait(fd int, b []byte) (int, unix.Errno) {
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	n, _, e := unix.RawSyscall6(unix.SYS_PWRITEV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1, ^uintptr(0), ^uintptr(0), unix.RWF_NOWAIT)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// rawEpollPoll returns how many events epoll instance ep has ready, without
// waiting.
func rawEpollPoll(ep int, events []unix.EpollEvent) (int, unix.Errno) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// NoWaitOutput returns a writer of f (stdout) whose writes that need no
// wait are made without telling the runtime (see above). What cannot be
// written at once, and every write where f does not take RWF_NOWAIT (a
// regular file, say), is written by f.Write, as before.
func NoWaitOutput(f *os.File) io.Writer {
	sc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	fd := -1
	if err := sc.Control(func(d uintptr) { fd = int(d) }); err != nil || fd < 0 {
		return f
	}
	return &noWaitWriter{f: f, fd: fd}
}

// noWaitWriter is NoWaitOutput's writer.
type noWaitWriter struct {
	f   *os.File
	fd  int
	off atomic.Bool // f does not take RWF_NOWAIT
}

func (w *noWaitWriter) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) && !w.off.Load() {
		n, e := rawWriteNoWait(w.fd, b[done:])
		switch e {
		case 0:
			done += n
			continue
		case unix.EOPNOTSUPP, unix.EINVAL, unix.ESPIPE, unix.ENOSYS:
			w.off.Store(true)
		}
		// EAGAIN (full), EPIPE and any other fault: f.Write waits, or
		// reports the fault as it always has.
		break
	}
	if done == len(b) {
		return done, nil
	}
	n, err := w.f.Write(b[done:])
	return done + n, err
}

// NoWaitConn returns c (boxsh-init's channel socket) reading and writing
// without telling the runtime (see above); it waits in the poller as c
// does. The writer also takes net.Buffers whole (WriteBuffers), in one
// writev. c is returned where it has no raw descriptor.
func NoWaitConn(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &noWaitConn{Conn: c, rc: rc}
}

// noWaitConn is NoWaitConn's connection.
type noWaitConn struct {
	net.Conn
	rc syscall.RawConn
}

func (c *noWaitConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var e unix.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			var r uintptr
			r, _, e = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			n = int(r)
			if e != unix.EINTR {
				return e != unix.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case e != 0:
		return 0, &net.OpError{Op: "read", Net: "unix", Err: os.NewSyscallError("read", e)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *noWaitConn) Write(b []byte) (int, error) {
	bufs := net.Buffers{b}
	n, err := c.WriteBuffers(&bufs)
	return int(n), err
}

// WriteBuffers writes bufs whole, in one writev where the socket takes
// them at once, consuming them as net.Buffers.WriteTo does.
func (c *noWaitConn) WriteBuffers(bufs *net.Buffers) (int64, error) {
	var total int64
	var e unix.Errno
	iovs := make([]unix.Iovec, 0, len(*bufs))
	err := c.rc.Write(func(fd uintptr) bool {
		for len(*bufs) > 0 {
			iovs = iovs[:0]
			for _, p := range *bufs {
				if len(p) == 0 {
					continue
				}
				iov := unix.Iovec{Base: &p[0]}
				iov.SetLen(len(p))
				iovs = append(iovs, iov)
				if len(iovs) == 1024 {
					break
				}
			}
			if len(iovs) == 0 {
				*bufs = (*bufs)[:0]
				return true
			}
			var r uintptr
			r, _, e = unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iovs[0])), uintptr(len(iovs)))
			switch e {
			case 0:
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			default:
				return true
			}
			total += int64(r)
			consume(bufs, int64(r))
		}
		return true
	})
	if err == nil && e != 0 {
		err = &net.OpError{Op: "write", Net: "unix", Err: os.NewSyscallError("writev", e)}
	}
	return total, err
}

// consume drops the first n bytes of bufs.
func consume(bufs *net.Buffers, n int64) {
	for len(*bufs) > 0 {
		l := int64(len((*bufs)[0]))
		if l > n {
			(*bufs)[0] = (*bufs)[0][n:]
			return
		}
		n -= l
		*bufs = (*bufs)[1:]
	}
}
