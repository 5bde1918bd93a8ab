package host

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRealPath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	real := filepath.Join(dir, "real")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "sub"), 0o755))
	require.NoError(t, os.Symlink(real, filepath.Join(dir, "link")))

	assert.Equal(t, filepath.Join(real, "sub"), RealPath(filepath.Join(dir, "link", "sub")))
	assert.Equal(t, filepath.Join(real, "sub"), RealPath(filepath.Join(dir, "link", ".", "sub", "..", "sub")))
	// What does not exist yet is kept, below the resolved prefix.
	assert.Equal(t, filepath.Join(real, "new", "dir"), RealPath(filepath.Join(dir, "link", "new", "dir")))
	assert.Equal(t, "/", RealPath("/"))
}

// On a case-insensitive volume the names are spelled as on disk.
func TestDiskCase(t *testing.T) {
	tree := map[string][]string{
		"/":             {"Users", "usr", "private"},
		"/Users":        {"u", "Shared"},
		"/Users/u":      {"Proj", "proj.old", "a", "A"},
		"/Users/u/Proj": {".git"},
	}
	names := func(dir string) ([]string, error) {
		if l, ok := tree[dir]; ok {
			return l, nil
		}
		return nil, errors.New("no such directory")
	}
	assert.Equal(t, "/Users/u/Proj/.git", diskCase("/users/U/PROJ/.GIT", names))
	assert.Equal(t, "/Users/u/Proj", diskCase("/Users/u/Proj", names))
	// Two names that differ only in case (a case-sensitive volume): as given.
	assert.Equal(t, "/Users/u/a", diskCase("/USERS/u/a", names))
	// Below a directory that cannot be listed: the rest as given.
	assert.Equal(t, "/Users/u/Proj/.git/Config", diskCase("/Users/u/proj/.GIT/Config", func(dir string) ([]string, error) {
		if dir == "/Users/u/Proj/.git" {
			return nil, errors.New("x")
		}
		return names(dir)
	}))
}
