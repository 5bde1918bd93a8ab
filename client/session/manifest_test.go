package session

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestManifestRoundTrip saves and loads a manifest whose paths are any
// bytes, and refuses a truncated or foreign file.
func TestManifestRoundTrip(t *testing.T) {
	m := manifest{
		".":           {Ino: 2, Mode: 0o755 | os.ModeDir, Mtime: -1},
		"a/b.txt":     {Ino: 1 << 40, Size: 12345, Mtime: 1700000000123456789, Ctime: 1700000000987654321, Mode: 0o644},
		"bad\xff\xfe": {Ino: 7, Size: 0, Mode: os.ModeSymlink | 0o777},
	}
	path := filepath.Join(t.TempDir(), ManifestFile)
	require.NoError(t, m.save(path))
	got, err := loadManifest(path)
	require.NoError(t, err)
	assert.Equal(t, m, got)

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b[:len(b)-1], 0o600))
	_, err = loadManifest(path)
	assert.ErrorContains(t, err, "truncated")
	require.NoError(t, os.WriteFile(path, []byte("something else"), 0o600))
	_, err = loadManifest(path)
	assert.ErrorContains(t, err, "not a manifest")
}
