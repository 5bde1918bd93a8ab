package files

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An unnamed file shows nowhere in its directory until it is linked.
func TestUnnamedFileInvisibleUntilLinked(t *testing.T) {
	dir := t.TempDir()
	f, err := createUnnamed(dir)
	require.NoError(t, err, "O_TMPFILE on the test file system")
	defer f.Close()
	_, err = f.WriteString("data")
	require.NoError(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing visible before the link")
	require.NoError(t, linkUnnamed(f, filepath.Join(dir, "a")))
	b, err := os.ReadFile(filepath.Join(dir, "a"))
	require.NoError(t, err)
	assert.Equal(t, "data", string(b))
	assert.ErrorIs(t, linkUnnamed(f, filepath.Join(dir, "a")), os.ErrExist)
}

// Replacing new and existing files leaves only the files, with the kept
// or default mode.
func TestReplaceFileLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	fresh, old := filepath.Join(dir, "fresh"), filepath.Join(dir, "old")
	require.NoError(t, os.WriteFile(old, []byte("before"), 0o600))
	require.NoError(t, replaceFile(fresh, []byte("new"), false))
	require.NoError(t, replaceFile(old, []byte("after"), false))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"fresh", "old"}, names)
	for p, want := range map[string]string{fresh: "new", old: "after"} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, want, string(b))
	}
	fi, err := os.Stat(old)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	fi, err = os.Stat(fresh)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
}

// A file larger than a write chunk is written whole, in place of the one
// it replaces, which the open file of a reader still shows as it was.
func TestReplaceLargeFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(path, []byte("before"), 0o640))
	reader, err := os.Open(path)
	require.NoError(t, err)
	defer reader.Close()
	data := make([]byte, 2*writeChunk+3)
	for i := range data {
		data[i] = byte(i * 7)
	}
	require.NoError(t, replaceFile(path, data, false))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
	old := make([]byte, 16)
	n, _ := reader.Read(old)
	assert.Equal(t, "before", string(old[:n]))
}
