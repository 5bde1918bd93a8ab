package host

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

func modeOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

// A cow DST is made, or made again, closed to other users, and the guard
// takes the group and other bits off it whenever they come back.
func TestCowDstClosedToOthers(t *testing.T) {
	base := t.TempDir()
	made, existing := filepath.Join(base, "a", "made"), filepath.Join(base, "existing")
	require.NoError(t, os.Mkdir(existing, 0o777))
	require.NoError(t, os.Chmod(existing, 0o777))
	binds := []policy.Bind{
		{Src: base, Dst: made, Mode: policy.CopyOnWrite},
		{Src: base, Dst: existing, Mode: policy.CopyOnWrite},
	}
	require.NoError(t, prepareCowDirs(binds))
	assert.Equal(t, os.FileMode(0o700), modeOf(t, made))
	assert.Equal(t, os.FileMode(0o700), modeOf(t, existing))
	assert.Equal(t, os.FileMode(0o755), modeOf(t, filepath.Dir(made)), "parents as before")
	_, work := plan.CowDirs(binds[0])
	assert.Equal(t, os.FileMode(0o700), modeOf(t, work))

	g, err := guardCowDsts(binds, hclog.NewNullLogger())
	require.NoError(t, err)
	require.NotNil(t, g)
	for _, d := range []string{made, existing} {
		require.NoError(t, os.Chmod(d, 0o777)) // as `chmod 777 .` at the mount's root
		assert.Eventually(t, func() bool { return modeOf(t, d) == 0o700 }, 2*time.Second, time.Millisecond, d)
	}
	require.NoError(t, os.Chmod(made, 0o500))
	require.NoError(t, os.Mkdir(filepath.Join(existing, "sub"), 0o777))
	require.NoError(t, os.Chmod(filepath.Join(existing, "sub"), 0o777))
	// The guard handles the changes in order: once it has closed
	// existing again, it has handled those before.
	require.NoError(t, os.Chmod(existing, 0o777))
	require.Eventually(t, func() bool { return modeOf(t, existing) == 0o700 }, 2*time.Second, time.Millisecond, "the guard has handled the changes")
	assert.Equal(t, os.FileMode(0o500), modeOf(t, made), "the owner's bits are the command's business")
	assert.Equal(t, os.FileMode(0o777), modeOf(t, filepath.Join(existing, "sub")), "only DST itself is kept closed")

	// Once more at the end, whatever happened last.
	require.NoError(t, os.Chmod(made, 0o755))
	g.close()
	assert.Equal(t, os.FileMode(0o700), modeOf(t, made))
	g.close() // idempotent

	g, err = guardCowDsts([]policy.Bind{{Src: base, Dst: base, Mode: policy.ReadWrite}}, hclog.NewNullLogger())
	assert.NoError(t, err)
	assert.Nil(t, g, "no cow bind, no guard")
	g.close()
	_, err = guardCowDsts([]policy.Bind{{Src: base, Dst: filepath.Join(base, "missing"), Mode: policy.CopyOnWrite}}, hclog.NewNullLogger())
	assert.Error(t, err)
}

func TestCowForeignFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mine"), nil, 0o644))
	foreign, err := CowForeignFiles(dir)
	require.NoError(t, err)
	assert.Empty(t, foreign)
	if os.Getuid() != 0 {
		return // only root can give a file away; the integration test covers users
	}
	p := filepath.Join(dir, "planted")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	require.NoError(t, os.Lchown(p, 65534, 65534))
	foreign, err = CowForeignFiles(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{p}, foreign)
}
