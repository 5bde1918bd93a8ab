package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/proc"
)

// treeStates lists the processes under pid, and the state of each.
func treeStates(pid int) map[int]byte {
	children := map[int][]proc.Entry{}
	for _, e := range proc.All() {
		children[e.PPID] = append(children[e.PPID], e)
	}
	out := map[int]byte{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, e := range children[p] {
			out[e.PID] = e.State
			queue = append(queue, e.PID)
		}
	}
	return out
}

// Freeze stops a tree of processes, the one that forks too, and thaw
// continues them, but not one its tree had stopped itself.
func TestFreeze(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sleep 100 & echo $!; sleep 100 & kill -STOP $!; echo $!; (while :; do sleep 0.01 & wait; done) & wait`)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		for pid := range treeStates(cmd.Process.Pid) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	buf := make([]byte, 64)
	var text string
	for strings.Count(text, "\n") < 2 {
		n, err := out.Read(buf)
		require.NoError(t, err)
		text += string(buf[:n])
	}
	pids := strings.Fields(text)
	selfStopped, _ := strconv.Atoi(pids[1])
	require.Eventually(t, func() bool { return len(treeStates(cmd.Process.Pid)) >= 4 }, 5*time.Second, 10*time.Millisecond)

	thaw, err := Freeze(cmd.Process.Pid, 2*time.Second)
	require.NoError(t, err)
	frozen := treeStates(cmd.Process.Pid)
	time.Sleep(50 * time.Millisecond) // a forking loop that was missed would show a new child
	assert.Equal(t, frozen, treeStates(cmd.Process.Pid), "no process came or went while frozen")
	e, _ := proc.StatOf(cmd.Process.Pid)
	assert.Equal(t, byte('T'), e.State)
	for pid, st := range frozen {
		assert.Contains(t, "TZ", string(st), "process %d", pid)
	}
	thaw()
	require.Eventually(t, func() bool {
		e, _ := proc.StatOf(cmd.Process.Pid)
		return e.State != 'T'
	}, 2*time.Second, 5*time.Millisecond)
	e, _ = proc.StatOf(selfStopped)
	assert.Equal(t, byte('T'), e.State, "a process stopped before stays stopped")
}

// Freeze holds a tree whose processes continue one another: children
// that send SIGCONT to their parent and to each other in a loop, and a
// parent that appends to a file in a loop. While frozen, the file does
// not grow, checked again and again over the whole frozen interval; at
// thaw it grows again.
func TestFreezeHoldsAgainstContinuingSiblings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "grows")
	script := `pids=
for i in 1 2 3 4 5 6; do
	(while :; do kill -CONT $$ $pids 2>/dev/null; done) &
	pids="$pids $!"
done
while :; do echo x >>"$1"; done`
	cmd := exec.Command("sh", "-c", script, "sh", file)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		for pid := range treeStates(cmd.Process.Pid) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	size := func() int64 {
		fi, err := os.Stat(file)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	require.Eventually(t, func() bool { return len(treeStates(cmd.Process.Pid)) == 6 && size() > 0 }, 5*time.Second, 10*time.Millisecond)

	for round := range 5 {
		began := time.Now()
		thaw, err := Freeze(cmd.Process.Pid, 5*time.Second)
		require.NoError(t, err, "round %d", round)
		t.Logf("round %d: frozen in %v", round, time.Since(began))
		frozen := size()
		for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
			if got := size(); got != frozen {
				thaw()
				t.Fatalf("round %d: the file grew from %d to %d bytes while frozen", round, frozen, got)
			}
			runtime.Gosched()
		}
		e, _ := proc.StatOf(cmd.Process.Pid)
		assert.Equal(t, byte('T'), e.State, "round %d: the writer is stopped", round)
		thaw()
		require.Eventually(t, func() bool { return size() > frozen }, 5*time.Second, time.Millisecond, "round %d: thawed, it writes again", round)
	}
}

// FreezeCgroup holds the same tree, in a cgroup v2 of its own: the
// file does not grow while the cgroup is frozen, whatever its processes
// send one another, and grows again at thaw. It needs a cgroup v2 the
// test may make a child of (its own, delegated, or as root).
func TestFreezeCgroupHoldsAgainstContinuingSiblings(t *testing.T) {
	dir := childCgroup(t)
	file := filepath.Join(t.TempDir(), "grows")
	script := `pids=
for i in 1 2 3 4 5 6; do
	(while :; do kill -CONT $$ $pids 2>/dev/null; done) &
	pids="$pids $!"
done
while :; do echo x >>"$1"; done`
	// The shell joins the cgroup before it starts its children.
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec sh -c "$0" sh "$@"`, script, dir, file)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		require.Eventually(t, func() bool { return os.Remove(dir) == nil }, 5*time.Second, 10*time.Millisecond)
	})
	size := func() int64 {
		fi, err := os.Stat(file)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	require.Eventually(t, func() bool { return len(treeStates(cmd.Process.Pid)) == 6 && size() > 0 }, 5*time.Second, 10*time.Millisecond)

	for round := range 5 {
		thaw, err := FreezeCgroup(dir, 5*time.Second)
		require.NoError(t, err, "round %d", round)
		frozen := size()
		for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
			if got := size(); got != frozen {
				thaw()
				t.Fatalf("round %d: the file grew from %d to %d bytes while frozen", round, frozen, got)
			}
			runtime.Gosched()
		}
		thaw()
		require.Eventually(t, func() bool { return size() > frozen }, 5*time.Second, time.Millisecond, "round %d: thawed, it writes again", round)
	}
}

// childCgroup makes a cgroup v2 below the test's own, or skips the test
// where it may not.
func childCgroup(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	var own string
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if i := slices.Index(f, "-"); i > 4 && i+1 < len(f) && f[i+1] == "cgroup2" && own != "" {
			dir := filepath.Join(f[4], own, "boxsh-freeze-test-"+strconv.Itoa(os.Getpid()))
			if err := os.Mkdir(dir, 0o755); err == nil {
				return dir
			}
		}
	}
	t.Skip("no cgroup v2 this test may make a child cgroup in (a rootless run without a delegated cgroup)")
	return ""
}
