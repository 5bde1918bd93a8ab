//go:build !linux

package bash

import "os"

// newPipe makes a pipe (see pipe_linux.go); here, os.Pipe's.
func newPipe(pollRead bool) (r, w *os.File, err error) { return os.Pipe() }
