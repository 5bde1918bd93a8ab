package usage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDisk(t *testing.T) {
	walk := DiskWalk{MaxEntries: 1000, MaxDepth: 8}
	dir := t.TempDir()
	empty, truncated, err := walk.Size(dir)
	require.NoError(t, err)
	assert.Less(t, empty, int64(64<<10), "the top directory alone")
	assert.False(t, truncated)

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	data := []byte(strings.Repeat("x", 1<<20))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "b", "big"), data, 0o644))
	require.NoError(t, os.Link(filepath.Join(dir, "a", "b", "big"), filepath.Join(dir, "a", "again")))
	n, truncated, err := walk.Size(dir)
	require.NoError(t, err)
	assert.False(t, truncated)
	assert.GreaterOrEqual(t, n, empty+1<<20, "the file's blocks")
	assert.Less(t, n, int64(2<<20), "a second link is not counted again")

	// A link to a directory outside is not followed.
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), data, 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	withLink, _, err := walk.Size(dir)
	require.NoError(t, err)
	assert.Less(t, withLink, n+(1<<20), "the link's target is not counted")

	var visited int
	_, truncated, err = DiskWalk{MaxEntries: 2, MaxDepth: 8, Visit: func(int) { visited++ }}.Size(dir)
	require.NoError(t, err)
	assert.True(t, truncated, "more entries than the bound")
	assert.Positive(t, visited)
	all, truncated, err := DiskWalk{MaxDepth: 8}.Size(dir)
	require.NoError(t, err)
	assert.False(t, truncated, "no bound on entries")
	assert.Equal(t, withLink, all)

	_, _, err = walk.Size(filepath.Join(dir, "link"))
	assert.Error(t, err, "the top directory itself may not be a link")
	_, _, err = walk.Size(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestDiskDepth(t *testing.T) {
	dir := t.TempDir()
	p := dir
	for range 3 {
		p = filepath.Join(p, "d")
	}
	require.NoError(t, os.MkdirAll(p, 0o755))
	var visited int
	walk := DiskWalk{MaxDepth: 3, Visit: func(int) { visited++ }}
	_, truncated, err := walk.Size(dir)
	require.NoError(t, err)
	assert.False(t, truncated, "three levels below the top: within MaxDepth 3")
	assert.Equal(t, 4, visited, "the top and the three")
	require.NoError(t, os.Mkdir(filepath.Join(p, "d"), 0o755))
	_, truncated, err = walk.Size(dir)
	require.NoError(t, err)
	assert.True(t, truncated, "deeper than MaxDepth")
}

// Directories whose mode keeps their owner out are walked all the same
// (lent read and search for the walk) and keep their mode.
func TestDiskUnreadableDirectories(t *testing.T) {
	dir := t.TempDir()
	data := []byte(strings.Repeat("x", 1<<20))
	modes := []os.FileMode{0o300, 0o000, 0o600, 0o100}
	for i, mode := range modes {
		sub := filepath.Join(dir, "d"+strings.Repeat("x", i))
		require.NoError(t, os.MkdirAll(filepath.Join(sub, "inner"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(sub, "inner", "f"), data, 0o644))
		require.NoError(t, os.Chmod(filepath.Join(sub, "inner"), 0o300), "nested")
		require.NoError(t, os.Chmod(sub, mode))
	}
	t.Cleanup(func() { // for TempDir's removal
		for i := range modes {
			sub := filepath.Join(dir, "d"+strings.Repeat("x", i))
			_ = os.Chmod(sub, 0o755)
			_ = os.Chmod(filepath.Join(sub, "inner"), 0o755)
		}
	})
	n, truncated, err := DiskWalk{MaxDepth: 8}.Size(dir)
	require.NoError(t, err)
	assert.False(t, truncated)
	assert.GreaterOrEqual(t, n, int64(len(modes))<<20, "every hidden file's blocks")
	for i, mode := range modes {
		fi, err := os.Lstat(filepath.Join(dir, "d"+strings.Repeat("x", i)))
		require.NoError(t, err)
		assert.Equal(t, mode, fi.Mode().Perm(), "its mode given back")
	}

	// The top directory itself, 0300.
	require.NoError(t, os.Chmod(dir, 0o300))
	top, truncated, err := DiskWalk{MaxDepth: 8}.Size(dir)
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, err)
	assert.False(t, truncated)
	assert.Equal(t, n, top)
}
