//go:build !linux

package proc

import (
	"io"
	"os"
)

// PollableInput returns f: off Linux stdin is read by blocking reads (see
// the Linux version).
func PollableInput(f *os.File) (r io.Reader, ok bool) { return f, false }
