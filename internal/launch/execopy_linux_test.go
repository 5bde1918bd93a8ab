package launch

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// heldCopies counts this process's descriptors open on the file id.
func heldCopies(t *testing.T, id [2]uint64) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if got, ok := fileID(os.Stat(filepath.Join("/proc/self/fd", fd.Name()))); ok && got == id {
			n++
		}
	}
	return n
}

// TestHoldExeCopy checks that holdExeCopy holds a process's executable
// until the process executes another one, and then lets it go.
func TestHoldExeCopy(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, "-c", "read x; exec "+sleep+" 5")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	id, ok := fileID(os.Stat("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"))
	if !ok {
		t.Fatal("no executable for the child")
	}
	release := holdExeCopy(cmd.Process.Pid)
	if n := heldCopies(t, id); n != 1 {
		t.Fatalf("%d descriptors on the child's executable, want 1 held", n)
	}
	release()
	time.Sleep(20 * exeCopyPoll)
	if n := heldCopies(t, id); n != 1 {
		t.Fatalf("let go before the child executed another program (%d held)", n)
	}
	_, _ = io.WriteString(stdin, "go\n")
	for deadline := time.Now().Add(5 * time.Second); heldCopies(t, id) != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still held after the child executed sleep")
		}
	}
}
