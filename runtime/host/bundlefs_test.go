package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/runtime/plan"
)

// TestResetDir: resetDir empties a directory that holds mode-0
// directories and symlinks, without following the links; it refuses a
// directory that is a symlink.
func TestResetDir(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.Chmod(outside, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o600))
	dir := filepath.Join(t.TempDir(), "d")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "locked", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "locked", "sub", "f"), nil, 0o644))
	require.NoError(t, os.Chmod(filepath.Join(dir, "locked", "sub"), 0))
	require.NoError(t, os.Chmod(filepath.Join(dir, "locked"), 0))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))

	require.NoError(t, resetDir(dir))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.FileExists(t, filepath.Join(outside, "keep"), "the link is not followed")
	fi, err := os.Stat(outside)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "nor chmodded")

	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(outside, link))
	assert.ErrorContains(t, resetDir(link), "is a symlink")
	assert.FileExists(t, filepath.Join(outside, "keep"))
}

// TestPrepareRootfsRefusesSymlinks: prepareRootfs does not make
// directories or files through a symlink in a reused root.
func TestPrepareRootfsRefusesSymlinks(t *testing.T) {
	outside := t.TempDir()
	root := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "etc")))
	err := prepareRootfs(root, rootOf(t, plan.HostFacts{Etc: []plan.HostPath{{Path: "/etc/passwd"}}}))
	assert.ErrorContains(t, err, "is a symlink")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries)

	victim := filepath.Join(outside, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("v"), 0o644))
	root = t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.Symlink(victim, filepath.Join(root, "etc", "passwd")))
	assert.Error(t, prepareRootfs(root, rootOf(t, plan.HostFacts{Etc: []plan.HostPath{{Path: "/etc/passwd"}}})), "a file placeholder that is a link")
}
