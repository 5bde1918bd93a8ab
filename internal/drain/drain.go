// Package drain reads the output pipe of a process that has exited.
//
// It reads up to a read deadline, for output still in flight, and then what
// the pipe holds. It does not wait for processes the exited one left behind
// that keep the pipe open.
//
// A read deadline alone loses output. Once the deadline has passed, a Read
// fails without looking at the pipe. On a loaded machine the reader may first
// run only then, after the process wrote its output and exited.
package drain

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// Reader returns a reader of f, the read end of a pipe read through the
// runtime's poller.
//
// It reads until EOF, or until f's read deadline has passed. Then it reads
// what the pipe holds, and ends (io.EOF) where a read would wait or after the
// pipe's capacity. So a process that keeps writing cannot hold it up.
func Reader(f *os.File) io.Reader { return &reader{f: f} }

type reader struct {
	f *os.File
	// rc reads f once its deadline has passed: Control, unlike Read,
	// does not refuse then.
	rc syscall.RawConn
	// left is how much more is read once the deadline has passed; -1
	// until the pipe's capacity is known.
	left int
}

func (r *reader) Read(b []byte) (int, error) {
	if r.rc == nil {
		n, err := r.f.Read(b)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if r.rc, err = r.f.SyscallConn(); err != nil {
			return n, err
		}
		r.left = -1
		if n > 0 {
			return n, nil
		}
	}
	return r.held(b)
}

// held reads what the pipe holds now.
func (r *reader) held(b []byte) (n int, err error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	cerr := r.rc.Control(func(fd uintptr) {
		if r.left < 0 {
			r.left = pipeSize(fd)
		}
		b = b[:min(len(b), r.left)]
		for {
			if n, err = syscall.Read(int(fd), b); err != syscall.EINTR {
				break
			}
		}
	})
	switch {
	case cerr != nil:
		return 0, cerr
	case errors.Is(err, syscall.EAGAIN), err == nil && n == 0:
		return 0, io.EOF
	case err != nil:
		return 0, err
	}
	r.left -= n
	return n, nil
}
