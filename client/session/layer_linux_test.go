package session

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A layer keeps every change of its session, and shares no file with the
// session it came from.
//
// A session started from the layer lists the same changes: whiteouts of both
// forms, opaque directories, modes, hard links and unreadable directories
// included.
func TestLayerKeepsEveryChange(t *testing.T) {
	s, src, dst := synthSession(t)
	// A whiteout as overlayfs makes it (a character device 0/0), a hard
	// link and a directory the sandbox closed.
	if err := unix.Mknod(filepath.Join(dst, "dir", "y"), unix.S_IFCHR, 0); err != nil {
		t.Fatalf("an unprivileged whiteout (Linux 5.8): %v", err)
	}
	require.NoError(t, os.Link(filepath.Join(dst, "new.txt"), filepath.Join(dst, "hard.txt")))
	mkTree(t, dst, tree{"closed/secret": "c\n"})
	want, err := s.Changes()
	require.NoError(t, err)
	require.NoError(t, os.Chmod(filepath.Join(dst, "closed"), 0))

	layer := filepath.Join(t.TempDir(), "snap", "layer")
	require.NoError(t, os.MkdirAll(filepath.Dir(layer), 0o700))
	require.NoError(t, s.SaveLayer(layer))
	fi, err := os.Stat(filepath.Join(dst, "closed"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0), fi.Mode().Perm(), "the lent bits are taken back")

	fi, err = os.Stat(filepath.Join(layer, "closed"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0), fi.Mode().Perm(), "the mode is kept")
	s2, err := New(context.Background(), Options{Src: src, BaseDir: t.TempDir(), Layer: layer})
	require.NoError(t, err)
	open := func(dirs ...string) {
		for _, d := range dirs {
			require.NoError(t, os.Chmod(filepath.Join(d, "closed"), 0o755))
		}
	}
	open(s2.Dst(), dst)
	got, err := s2.Changes()
	require.NoError(t, err)
	assert.Equal(t, summary(want), summary(got))
	assert.Equal(t, "y", xattrValue(filepath.Join(s2.Dst(), "repl"), "user.overlay.opaque"))
	var a, b unix.Stat_t
	require.NoError(t, unix.Stat(filepath.Join(s2.Dst(), "new.txt"), &a))
	require.NoError(t, unix.Stat(filepath.Join(s2.Dst(), "hard.txt"), &b))
	assert.Equal(t, a.Ino, b.Ino, "a hard link stays one")

	// The copy is a copy: writing the first session's file leaves it.
	require.NoError(t, os.WriteFile(filepath.Join(dst, "a.txt"), []byte("later\n"), 0o644))
	b2, err := os.ReadFile(filepath.Join(s2.Dst(), "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "A\n", string(b2))

	// Reset puts the layer back.
	require.NoError(t, os.WriteFile(filepath.Join(s2.Dst(), "extra"), []byte("x"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(s2.Dst(), "closed"), 0))
	require.NoError(t, s2.Reset(layer, nil))
	open(s2.Dst())
	got, err = s2.Changes()
	require.NoError(t, err)
	assert.Equal(t, summary(want), summary(got))

	require.Error(t, CopyLayer(dst, layer), "an existing layer is not overwritten")
	open(layer)
}
