package terminal

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/creack/pty"
)

// startPTY starts cmd on a new pseudo-terminal of size ws, as
// pty.StartWithSize does, but opens it with openPTY.
//
// In the macOS sandbox, grantpt and unlockpt may fail where the terminal works
// anyway.
func startPTY(cmd *exec.Cmd, ws *pty.Winsize) (*os.File, error) {
	master, tty, err := openPTY()
	if err != nil {
		return nil, err
	}
	defer tty.Close()
	if ws != nil {
		if err := pty.Setsize(master, ws); err != nil {
			master.Close()
			return nil, err
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, err
	}
	return master, nil
}

// ptyOps are the steps of opening a pseudo-terminal the BSD way
// (posix_openpt, ptsname, grantpt, unlockpt, open the terminal).
type ptyOps struct {
	openMaster func() (*os.File, error)
	name       func(master *os.File) (string, error)
	grant      func(master *os.File) error
	unlock     func(master *os.File) error
	openTTY    func(name string) (*os.File, error)
}

// openWith opens a pseudo-terminal with ops.
//
// A failure of grant or unlock is not fatal, as in the original:
// sandbox_darwin.cpp:341-346 allows the devices, and its terminal code ignores
// these failures. Under a Seatbelt profile they can be refused, since they
// change the owner and mode of the terminal device. The terminal then still
// opens, already ours and unlocked; if it does not, opening it fails and says
// so. creack/pty's Open makes them fatal.
func openWith(ops ptyOps) (master, tty *os.File, err error) {
	master, err = ops.openMaster()
	if err != nil {
		return nil, nil, fmt.Errorf("open pseudo-terminal: %w", err)
	}
	name, err := ops.name(master)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("pseudo-terminal name: %w", err)
	}
	grantErr := ops.grant(master)
	unlockErr := ops.unlock(master)
	tty, err = ops.openTTY(name)
	if err != nil {
		master.Close()
		if grantErr != nil || unlockErr != nil {
			return nil, nil, fmt.Errorf("open %s: %w (grantpt: %v, unlockpt: %v)", name, err, grantErr, unlockErr)
		}
		return nil, nil, fmt.Errorf("open %s: %w", name, err)
	}
	return master, tty, nil
}
