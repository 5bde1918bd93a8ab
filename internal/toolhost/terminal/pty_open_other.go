//go:build !darwin

package terminal

import (
	"os"

	"github.com/creack/pty"
)

// openPTY opens a pseudo-terminal.
func openPTY() (master, tty *os.File, err error) { return pty.Open() }
