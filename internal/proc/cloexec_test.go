package proc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCloseInheritedOnExec checks that a descriptor opened without
// close-on-exec (as one a parent leaked would be) does not reach a child
// after CloseInheritedOnExec, and stays usable here.
func TestCloseInheritedOnExec(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
	var fds [2]int
	require.NoError(t, syscall.Pipe(fds[:])) // no O_CLOEXEC: inheritable
	t.Cleanup(func() { _ = syscall.Close(fds[0]); _ = syscall.Close(fds[1]) })
	pipe, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fds[1]))
	require.NoError(t, err)
	// What the shell itself (not a program it runs) has at that number.
	leaked := func() bool {
		out, _ := exec.Command("/bin/sh", "-c", "readlink /proc/$$/fd/"+strconv.Itoa(fds[1])).Output()
		return strings.TrimSpace(string(out)) == pipe
	}
	require.True(t, leaked(), "the test's pipe is inheritable before")

	CloseInheritedOnExec()
	assert.False(t, leaked(), "no child inherits it after")
	_, err = syscall.Write(fds[1], []byte("x"))
	assert.NoError(t, err, "the descriptor stays open here")
}
