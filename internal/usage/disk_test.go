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
	dir := t.TempDir()
	empty, truncated, err := Disk(dir, 1000)
	require.NoError(t, err)
	assert.Zero(t, empty)
	assert.False(t, truncated)

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	data := []byte(strings.Repeat("x", 1<<20))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "b", "big"), data, 0o644))
	require.NoError(t, os.Link(filepath.Join(dir, "a", "b", "big"), filepath.Join(dir, "a", "again")))
	n, truncated, err := Disk(dir, 1000)
	require.NoError(t, err)
	assert.False(t, truncated)
	assert.GreaterOrEqual(t, n, int64(1<<20), "the file's blocks")
	assert.Less(t, n, int64(2<<20), "a second link is not counted again")

	// A link to a directory outside is not followed.
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), data, 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	withLink, _, err := Disk(dir, 1000)
	require.NoError(t, err)
	assert.Less(t, withLink, n+(1<<20), "the link's target is not counted")

	_, truncated, err = Disk(dir, 2)
	require.NoError(t, err)
	assert.True(t, truncated, "more entries than the bound")

	_, _, err = Disk(filepath.Join(dir, "link"), 1000)
	assert.Error(t, err, "the top directory itself may not be a link")
	_, _, err = Disk(filepath.Join(dir, "missing"), 1000)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestDiskDepth(t *testing.T) {
	dir := t.TempDir()
	p := dir
	for range maxDepth + 2 {
		p = filepath.Join(p, "d")
	}
	require.NoError(t, os.MkdirAll(p, 0o755))
	_, truncated, err := Disk(dir, 1000)
	require.NoError(t, err)
	assert.True(t, truncated, "deeper than maxDepth")
}
