package files

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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
	require.NoError(t, replaceFile(context.Background(), fresh, []byte("new"), false))
	require.NoError(t, replaceFile(context.Background(), old, []byte("after"), false))
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
	require.NoError(t, replaceFile(context.Background(), path, data, false))
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

// A large write that fails part way (here at the file size limit, as it
// would on a full disk or quota) reports the error and leaves the file it
// was to replace whole, and no temporary behind.
func TestReplaceLargeFileFailsWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(path, []byte("before"), 0o644))
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_FSIZE, &old))
	limit := unix.Rlimit{Cur: writeChunk + 100, Max: old.Max}
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_FSIZE, &limit))
	err := replaceFile(context.Background(), path, make([]byte, 2*writeChunk+3), false)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_FSIZE, &old))
	require.ErrorIs(t, err, unix.EFBIG)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "before", string(got))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

// The replaced file's hold (holdInode) is let go after each write: many
// large replacements leave no descriptor open.
func TestReplaceLargeFileReleasesHold(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(path, []byte("before"), 0o644))
	fds := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		require.NoError(t, err)
		return len(entries)
	}
	before := fds()
	data := make([]byte, writeChunk+1)
	for range 20 {
		require.NoError(t, replaceFile(context.Background(), path, data, false))
	}
	assert.Eventually(t, func() bool { return fds() <= before }, 5*time.Second, 10*time.Millisecond, "descriptors: %d before", before)
}
