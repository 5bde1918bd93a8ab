package host

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/runtime/plan"
)

func TestProtectionWatch(t *testing.T) {
	home := t.TempDir()
	at := func(p string) string { return filepath.Join(home, p) }
	require.NoError(t, os.WriteFile(at(".bashrc"), []byte("rc"), 0o644))
	require.NoError(t, os.MkdirAll(at(".aws"), 0o755)) // made for a placeholder
	require.NoError(t, os.WriteFile(at(".aws/credentials"), nil, 0o444))
	protect := []plan.HostPath{
		{Path: at(".bashrc")},
		{Path: at(".aws/credentials"), Missing: true, MissingFrom: at(".aws/credentials"), Pins: []string{at(".aws")}},
	}
	fresh := func(t *testing.T) *protectionWatch {
		w, err := watchProtection(protect, nil)
		require.NoError(t, err)
		t.Cleanup(w.close)
		return w
	}

	t.Run("unrelated changes", func(t *testing.T) {
		w := fresh(t)
		require.NoError(t, os.WriteFile(at("notes.txt"), []byte("x"), 0o644))
		require.NoError(t, os.Remove(at("notes.txt")))
		require.NoError(t, os.WriteFile(at(".bashrc"), []byte("edited in place"), 0o644))
		assert.Empty(t, w.check(), "writing a protected file in place keeps its mount")
	})
	t.Run("renamed over", func(t *testing.T) {
		w := fresh(t)
		require.NoError(t, os.WriteFile(at(".bashrc.new"), []byte("new"), 0o644))
		require.NoError(t, os.Rename(at(".bashrc.new"), at(".bashrc")))
		assert.Equal(t, at(".bashrc"), w.check())
		assert.Equal(t, at(".bashrc"), w.check(), "it stays lost")
	})
	t.Run("pinned directory removed", func(t *testing.T) {
		w := fresh(t)
		require.NoError(t, os.Remove(at(".aws/credentials")))
		require.NoError(t, os.Remove(at(".aws")))
		assert.Contains(t, w.check(), at(".aws"))
	})
	t.Run("placeholder made by the runtime", func(t *testing.T) {
		ph := plan.HostPath{Path: at(".zshrc"), Missing: true, MissingFrom: at(".zshrc")}
		w, err := watchProtection([]plan.HostPath{ph}, nil)
		require.NoError(t, err)
		defer w.close()
		require.NoError(t, os.WriteFile(ph.Path, nil, 0o644)) // the mount point
		assert.Empty(t, w.check(), "making the placeholder is no change")
		require.NoError(t, os.Remove(ph.Path))
		assert.Equal(t, ph.Path, w.check(), "removing it is")
	})
	t.Run("directory gone since the walk", func(t *testing.T) {
		gone := at("removed/.git/hooks")
		_, err := watchProtection([]plan.HostPath{{Path: gone}}, nil)
		require.ErrorIs(t, err, fs.ErrNotExist)
		assert.ErrorContains(t, err, at("removed/.git")+" (above protected "+gone+") changed on the host while the sandbox started, start again")
	})
	t.Run("nil", func(t *testing.T) {
		w, err := watchProtection(nil, nil)
		require.NoError(t, err)
		assert.Nil(t, w)
		assert.Empty(t, w.check())
		w.close()
	})
}

// The guard hands on a change that undoes a protection as the kernel delivers
// it, not at the next tick of a timer.
//
// Over several trials, the median delay from the rename to onLost must be far
// below the 25 ms that a 50 ms poll gives, with room for a loaded machine.
func TestProtectionWatchReactsAtOnce(t *testing.T) {
	home := t.TempDir()
	rc := filepath.Join(home, ".bashrc")
	const trials = 21
	var lat []time.Duration
	for range trials {
		require.NoError(t, os.WriteFile(rc, []byte("rc"), 0o644))
		lost := make(chan time.Time, 1)
		w, err := watchProtection([]plan.HostPath{{Path: rc}}, func(string) { lost <- time.Now() })
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(rc+".new", []byte("new"), 0o644))
		start := time.Now()
		require.NoError(t, os.Rename(rc+".new", rc))
		select {
		case at := <-lost:
			lat = append(lat, at.Sub(start))
		case <-time.After(5 * time.Second):
			t.Fatal("no onLost 5 s after the protected file was replaced")
		}
		assert.Equal(t, rc, w.check())
		w.close()
	}
	slices.Sort(lat)
	t.Logf("onLost after the rename: min %v, median %v, max %v", lat[0], lat[trials/2], lat[trials-1])
	assert.Less(t, lat[trials/2], 5*time.Millisecond, "median over %d trials: %v", trials, lat)
}

// An idle watch reads nothing: its goroutine sleeps in the poller.
func TestProtectionWatchIdle(t *testing.T) {
	home := t.TempDir()
	rc := filepath.Join(home, ".bashrc")
	require.NoError(t, os.WriteFile(rc, []byte("rc"), 0o644))
	w, err := watchProtection([]plan.HostPath{{Path: rc}}, nil)
	require.NoError(t, err)
	defer w.close()
	require.Eventually(t, func() bool { return w.in.wakeups.Load() == 1 }, 2*time.Second, time.Millisecond, "the first read")
	time.Sleep(time.Second)
	assert.Equal(t, int64(1), w.in.wakeups.Load(), "reads in a second without a change")
	require.NoError(t, os.WriteFile(filepath.Join(home, "other"), nil, 0o644))
	require.Eventually(t, func() bool { return w.in.wakeups.Load() == 2 }, 2*time.Second, time.Millisecond, "a change in the directory wakes it once")
	assert.Empty(t, w.check())
}

// close stops the goroutine and releases the descriptor, also while it
// sleeps in the poller, and a check after it reports what was seen.
func TestProtectionWatchClose(t *testing.T) {
	home := t.TempDir()
	rc := filepath.Join(home, ".bashrc")
	require.NoError(t, os.WriteFile(rc, []byte("rc"), 0o644))
	w, err := watchProtection([]plan.HostPath{{Path: rc}}, nil)
	require.NoError(t, err)
	require.NoError(t, os.Remove(rc))
	require.Eventually(t, func() bool { return w.check() == rc }, 2*time.Second, time.Millisecond)
	done := make(chan struct{})
	go func() { w.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not return")
	}
	assert.Equal(t, rc, w.check(), "still reported after close")
	w.close()
}
