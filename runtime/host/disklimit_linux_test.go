package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fsize is the RLIMIT_FSIZE of pid.
func fsize(t *testing.T, pid int) unix.Rlimit {
	t.Helper()
	var r unix.Rlimit
	require.NoError(t, unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &r))
	return r
}

// TestDiskLimit checks the limit's accounting and actions on a process tree.
//
// The limit accounts the layer's blocks. It sets the file size limit of the
// tree when started, and sets it to 0 once past the limit. It makes the tree
// stale once under the limit, and kills the tree's first process when the
// layer grows past the slack while full.
func TestDiskLimit(t *testing.T) {
	const limit = 4 << 20
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	d, err := NewDiskLimit(dir, limit, nil)
	require.NoError(t, err)
	defer d.Close()
	used, full := d.Used()
	assert.False(t, full)
	assert.Less(t, used, int64(limit))

	// A parent with a child: the sweep reaches both.
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var child int
	require.Eventually(t, func() bool {
		if ds := descendants(cmd.Process.Pid); len(ds) == 2 {
			child = ds[1]
			return true
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, d.Started(cmd.Process.Pid))
	for _, pid := range []int{cmd.Process.Pid, child} {
		assert.Equal(t, unix.Rlimit{Cur: limit, Max: limit}, fsize(t, pid))
	}

	// Past the limit (a file deep down, seen through the watch of its
	// directory): soft and hard 0, which the process cannot raise.
	big := filepath.Join(dir, "a", "b", "big")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", limit+1)), 0o644))
	require.Eventually(t, func() bool { _, full := d.Used(); return full }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, unix.Rlimit{Cur: 0, Max: 0}, fsize(t, child))
	assert.Empty(t, d.Stale(cmd.Process.Pid))

	// Under it again: a new boxsh-init gets the limit back.
	require.NoError(t, os.Remove(big))
	require.Eventually(t, func() bool { _, full := d.Used(); return !full }, 5*time.Second, 10*time.Millisecond)
	assert.NotEmpty(t, d.Stale(cmd.Process.Pid))
	assert.Zero(t, d.Killed())

	// Past the limit again, then growing past the slack while held at
	// soft 0 (as a process raising its own limit would): the first
	// process is killed.
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", limit+1)), 0o644))
	require.Eventually(t, func() bool { _, full := d.Used(); return full }, 5*time.Second, 10*time.Millisecond)
	assert.Zero(t, d.Killed(), "the reaction's overshoot is not an evasion")
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	more, err := os.Create(filepath.Join(dir, "more"))
	require.NoError(t, err)
	defer more.Close()
	mib := []byte(strings.Repeat("x", 1<<20))
	deadline := time.After(10 * time.Second)
	for killed := false; !killed; {
		select {
		case <-done:
			killed = true
		case <-deadline:
			t.Fatal("not killed past the slack")
		case <-time.After(10 * time.Millisecond):
			_, err := more.Write(mib) // growing on, a MiB at a time
			require.NoError(t, err)
		}
	}
	assert.Equal(t, 1, d.Killed())
	used, _ = d.Used()
	assert.Greater(t, used, limit+d.Slack())
}

// A symbolic link in the layer is not followed, nor a tree deeper than
// the walk goes left uncounted.
func TestDiskLimitWalk(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "f"), []byte(strings.Repeat("x", 1<<20)), 0o644))
	dir := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	d, err := NewDiskLimit(dir, 64<<20, nil)
	require.NoError(t, err)
	defer d.Close()
	used, _ := d.Used()
	assert.Less(t, used, int64(1<<20), "the link's target is not counted")

	p := dir
	for range diskMaxDepth + 1 {
		p = filepath.Join(p, "d")
		require.NoError(t, os.Mkdir(p, 0o755))
	}
	assert.Greater(t, d.walk(), int64(64<<20), "too deep counts as past the limit and slack")
}

func TestDiskSlack(t *testing.T) {
	assert.Equal(t, int64(8<<20), DiskSlack(1<<20))
	assert.Equal(t, int64(128<<20), DiskSlack(1<<30))
	assert.Equal(t, int64(256<<20), DiskSlack(100<<30))
}

// startTree starts sh -c script in dir, and hands it to d.
func startTree(t *testing.T, d *DiskLimit, dir, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.NoError(t, d.Started(cmd.Process.Pid))
	return cmd
}

// Files the sandbox's processes hold open with no name left (unlinked
// while open) count, though no walk of the layer sees them; a file in
// memory (/dev/shm) does not.
func TestDiskLimitHeldDeleted(t *testing.T) {
	const limit = 4 << 20
	dir := t.TempDir()
	d, err := NewDiskLimit(dir, limit, nil)
	require.NoError(t, err)
	defer d.Close()
	startTree(t, d, dir, `exec 3>held; rm held; ulimit -f unlimited 2>/dev/null; head -c 6M /dev/zero >&3 2>/dev/null; exec sleep 60`)
	require.Eventually(t, func() bool { _, full := d.Used(); return full }, 10*time.Second, 10*time.Millisecond,
		"6 MiB held by a descriptor alone")
	used, _ := d.Used()
	assert.GreaterOrEqual(t, used, int64(limit), "its blocks")
}

// A boxsh-init started while the layer is past the limit gets a hard file size
// limit of 0, and is stale once the layer is under the limit again.
//
// No process can raise its soft limit again, so a restart grants no fresh
// allowance.
func TestDiskLimitRestartFull(t *testing.T) {
	const limit = 4 << 20
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", limit+1)), 0o644))
	d, err := NewDiskLimit(dir, limit, nil)
	require.NoError(t, err)
	defer d.Close()
	_, full := d.Used()
	require.True(t, full)
	assert.Zero(t, d.FileSize(), "a new boxsh-init starts full")

	cmd := startTree(t, d, dir, `while [ ! -e go ]; do sleep 0.01; done; ulimit -S -f 1024 2>/dev/null`)
	assert.Equal(t, unix.Rlimit{Cur: 0, Max: 0}, fsize(t, cmd.Process.Pid))
	assert.Empty(t, d.Stale(cmd.Process.Pid), "still full")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
	assert.Error(t, cmd.Wait(), "the soft limit cannot be raised")

	require.NoError(t, os.Remove(big))
	require.Eventually(t, func() bool { _, full := d.Used(); return !full }, 10*time.Second, 10*time.Millisecond)
	assert.NotEmpty(t, d.Stale(cmd.Process.Pid), "under the limit: a new boxsh-init lifts the cap")
	assert.Equal(t, uint64(limit), d.FileSize(), "and starts with the limit")
	assert.Empty(t, d.Stale(cmd.Process.Pid+1), "not the current one")
}

// Files made with O_TMPFILE, which never had a name, count too.
func TestDiskLimitTmpfile(t *testing.T) {
	if dir := os.Getenv("BOXSH_TEST_TMPFILE_IN"); dir != "" {
		for range 2 { // each within the file size limit
			fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY, 0o600)
			require.NoError(t, err)
			_, err = unix.Write(fd, []byte(strings.Repeat("x", 3<<20)))
			require.NoError(t, err)
		}
		_, _ = os.Stdin.Read(make([]byte, 1)) // held until the test ends
		return
	}
	const limit = 4 << 20
	dir := t.TempDir()
	d, err := NewDiskLimit(dir, limit, nil)
	require.NoError(t, err)
	defer d.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskLimitTmpfile$")
	cmd.Env = append(os.Environ(), "BOXSH_TEST_TMPFILE_IN="+dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	require.NoError(t, d.Started(cmd.Process.Pid))
	require.Eventually(t, func() bool { _, full := d.Used(); return full }, 10*time.Second, 10*time.Millisecond,
		"6 MiB in files that have no name")
}
