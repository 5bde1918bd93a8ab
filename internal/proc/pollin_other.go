//go:build !linux

package proc

import (
	"io"
	"net"
	"os"
)

// PollableInput returns f: off Linux stdin is read by blocking reads (see
// the Linux version).
func PollableInput(f *os.File) (r io.Reader, ok bool) { return f, false }

// NoWaitOutput returns f: off Linux writes are made as f makes them.
func NoWaitOutput(f *os.File) io.Writer { return f }

// NoWaitConn returns c: off Linux its reads and writes are c's.
func NoWaitConn(c net.Conn) net.Conn { return c }
