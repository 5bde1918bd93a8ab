package proc

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExitStatus(t *testing.T) {
	for script, want := range map[string]int{
		"exit 0":        0,
		"exit 3":        3,
		"kill -TERM $$": 128 + int(syscall.SIGTERM),
		"kill -KILL $$": 128 + int(syscall.SIGKILL),
	} {
		cmd := exec.Command("/bin/sh", "-c", script)
		_ = cmd.Run()
		assert.Equal(t, want, ExitStatus(cmd.ProcessState), script)
	}
	assert.Equal(t, -1, ExitStatus(nil))
	assert.Equal(t, 137, SignalStatus(syscall.SIGKILL))
}
