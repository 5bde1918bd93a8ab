package durable

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WriteFile replaces a file whole and leaves no temporary file beside it.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.json")
	require.NoError(t, WriteFile(path, []byte("one"), 0o600))
	require.NoError(t, WriteFile(path, []byte("two"), 0o640))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left")
}

// A temporary directory is abandoned once its maker closed it without
// committing it (as a killed maker does), not before; a committed one is
// in its place.
func TestTempDirAbandoned(t *testing.T) {
	parent := t.TempDir()
	live, err := TempDir(parent, ".tmp-")
	require.NoError(t, err)
	dead, err := TempDir(parent, ".tmp-")
	require.NoError(t, err)
	dead.Close()
	done, err := TempDir(parent, ".tmp-")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(done.Path, "f"), []byte("f"), 0o600))
	require.NoError(t, done.Commit(filepath.Join(parent, "made")))
	done.Close()

	got, err := Abandoned(parent, ".tmp-")
	require.NoError(t, err)
	assert.Equal(t, []string{dead.Path}, got)
	assert.FileExists(t, filepath.Join(parent, "made", "f"))
	assert.True(t, Locked(live.Path))
	live.Close()
	assert.False(t, Locked(live.Path))
}
