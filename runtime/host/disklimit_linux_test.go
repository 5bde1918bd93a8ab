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

// The limit accounts the layer's blocks, sets the file size limit of a
// process tree when started, to 0 once past the limit and back once under
// it, and kills the tree's first process past the slack.
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
	// directory): soft 0.
	big := filepath.Join(dir, "a", "b", "big")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", limit+1)), 0o644))
	require.Eventually(t, func() bool { _, full := d.Used(); return full }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, unix.Rlimit{Cur: 0, Max: limit}, fsize(t, child))

	// Under it again: the limit back.
	require.NoError(t, os.Remove(big))
	require.Eventually(t, func() bool { _, full := d.Used(); return !full }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, unix.Rlimit{Cur: limit, Max: limit}, fsize(t, child))
	assert.Zero(t, d.Killed())

	// Past the slack: the first process is killed.
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", limit+int(d.Slack())+1)), 0o644))
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("not killed past the slack")
	}
	assert.Equal(t, 1, d.Killed())
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
