package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProtectionWatch(t *testing.T) {
	home := t.TempDir()
	at := func(p string) string { return filepath.Join(home, p) }
	require.NoError(t, os.WriteFile(at(".bashrc"), []byte("rc"), 0o644))
	require.NoError(t, os.MkdirAll(at(".aws"), 0o755)) // made for a placeholder
	require.NoError(t, os.WriteFile(at(".aws/credentials"), nil, 0o444))
	protect := []HostPath{
		{Path: at(".bashrc")},
		{Path: at(".aws/credentials"), Missing: true, MissingFrom: at(".aws/credentials"), Pins: []string{at(".aws")}},
	}
	fresh := func(t *testing.T) *protectionWatch {
		w, err := watchProtection(protect)
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
		ph := HostPath{Path: at(".zshrc"), Missing: true, MissingFrom: at(".zshrc")}
		w, err := watchProtection([]HostPath{ph})
		require.NoError(t, err)
		defer w.close()
		require.NoError(t, os.WriteFile(ph.Path, nil, 0o644)) // the mount point
		assert.Empty(t, w.check(), "making the placeholder is no change")
		require.NoError(t, os.Remove(ph.Path))
		assert.Equal(t, ph.Path, w.check(), "removing it is")
	})
	t.Run("nil", func(t *testing.T) {
		w, err := watchProtection(nil)
		require.NoError(t, err)
		assert.Nil(t, w)
		assert.Empty(t, w.check())
		w.close()
	})
}
