package terminal

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePTY is a ptyOps whose steps fail as told, on pipe ends.
func fakePTY(t *testing.T, grantErr, unlockErr, nameErr, ttyErr error) (ptyOps, *[]string) {
	var calls []string
	return ptyOps{
		openMaster: func() (*os.File, error) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			t.Cleanup(func() { r.Close(); w.Close() })
			calls = append(calls, "open")
			return r, nil
		},
		name:   func(*os.File) (string, error) { calls = append(calls, "name"); return "/dev/ttys007", nameErr },
		grant:  func(*os.File) error { calls = append(calls, "grant"); return grantErr },
		unlock: func(*os.File) error { calls = append(calls, "unlock"); return unlockErr },
		openTTY: func(name string) (*os.File, error) {
			calls = append(calls, "tty "+name)
			if ttyErr != nil {
				return nil, ttyErr
			}
			r, w, err := os.Pipe()
			require.NoError(t, err)
			t.Cleanup(func() { r.Close(); w.Close() })
			return w, nil
		},
	}, &calls
}

// Issue 29, item 9: grantpt and unlockpt refused by the sandbox do not
// stop a terminal that opens anyway.
func TestOpenPTYToleratesGrantAndUnlock(t *testing.T) {
	denied := errors.New("operation not permitted")
	ops, calls := fakePTY(t, denied, denied, nil, nil)
	master, tty, err := openWith(ops)
	require.NoError(t, err)
	assert.NotNil(t, master)
	assert.NotNil(t, tty)
	assert.Equal(t, []string{"open", "name", "grant", "unlock", "tty /dev/ttys007"}, *calls)

	// A terminal that does not open is an error that names the refusals.
	ops, _ = fakePTY(t, denied, nil, nil, errors.New("permission denied"))
	_, _, err = openWith(ops)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/dev/ttys007")
	assert.Contains(t, err.Error(), "grantpt: operation not permitted")

	// Without a name there is nothing to open.
	ops, calls = fakePTY(t, nil, nil, errors.New("no name"), nil)
	_, _, err = openWith(ops)
	assert.Error(t, err)
	assert.NotContains(t, *calls, "grant")
}

// startPTY runs a command on the terminal, as pty.StartWithSize did.
func TestStartPTY(t *testing.T) {
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skip("no /dev/ptmx")
	}
	out, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	out.Close()
	cmd := exec.Command("/bin/sh", "-c", "stty size > "+out.Name()+"; test -t 0 && echo tty >> "+out.Name())
	f, err := startPTY(cmd, &pty.Winsize{Rows: 7, Cols: 33})
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, cmd.Wait())
	b, err := os.ReadFile(out.Name())
	require.NoError(t, err)
	assert.Equal(t, "7 33\ntty\n", string(b))
}
