//go:build !linux

package terminal

import "os"

// pollable returns f: outside Linux the pseudo-terminal master stays in
// blocking mode, as creack/pty leaves it.
func pollable(f *os.File) *os.File { return f }
