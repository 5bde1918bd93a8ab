package session

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/durable"
)

// A Reset killed at any of its steps leaves the session whole once
// settled: before its stage is whole, the old changes; after, the
// layer's, with the files written with it; and nothing of the reset
// beside them.
func TestResetKilledAtEachStep(t *testing.T) {
	steps := []struct {
		name string
		// kill leaves the session as a Reset killed at this step does.
		kill func(t *testing.T, s *Session, layer string)
		// reset tells whether the settled session has the layer's changes.
		reset bool
	}{
		{"while staging", func(t *testing.T, s *Session, layer string) {
			tmp, err := durable.TempDir(s.dir, resetPrefix)
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Join(tmp.Path, stagedDst, "half"), 0o700))
			tmp.Close() // its maker dies
		}, false},
		{"staged", func(t *testing.T, s *Session, layer string) {
			stage(t, s, layer)
		}, true},
		{"old DST moved aside", func(t *testing.T, s *Session, layer string) {
			st := stage(t, s, layer)
			require.NoError(t, os.Rename(s.info.Dst, filepath.Join(st, replacedDst)))
		}, true},
		{"new DST in place", func(t *testing.T, s *Session, layer string) {
			st := stage(t, s, layer)
			require.NoError(t, os.Rename(s.info.Dst, filepath.Join(st, replacedDst)))
			require.NoError(t, os.Rename(filepath.Join(st, stagedDst), s.info.Dst))
		}, true},
		{"files in place", func(t *testing.T, s *Session, layer string) {
			st := stage(t, s, layer)
			require.NoError(t, os.Rename(s.info.Dst, filepath.Join(st, replacedDst)))
			require.NoError(t, os.Rename(filepath.Join(st, stagedDst), s.info.Dst))
			require.NoError(t, os.Rename(filepath.Join(st, "record"), filepath.Join(s.dir, "record")))
			require.NoError(t, os.Rename(filepath.Join(st, ManifestFile), filepath.Join(s.dir, ManifestFile)))
		}, true},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			s, src, _ := synthSession(t)
			layer := filepath.Join(t.TempDir(), "snap", "layer")
			require.NoError(t, os.MkdirAll(filepath.Dir(layer), 0o700))
			require.NoError(t, s.SaveLayer(layer))
			want, err := s.Changes()
			require.NoError(t, err)
			// The session moves on from the layer: one more file.
			s2, err := New(context.Background(), Options{Src: src, BaseDir: t.TempDir(), Layer: layer})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(s2.Dst(), "later.txt"), []byte("later\n"), 0o644))
			before, err := s2.Changes()
			require.NoError(t, err)

			step.kill(t, s2, layer)
			did, err := s2.Settle()
			require.NoError(t, err)
			assert.NotEmpty(t, did, "settling says what it did")
			got, err := s2.Changes()
			require.NoError(t, err)
			entries, err := os.ReadDir(s2.dir)
			require.NoError(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if step.reset {
				assert.Equal(t, summary(want), summary(got), "the layer's changes")
				b, err := os.ReadFile(filepath.Join(s2.dir, "record"))
				require.NoError(t, err, "the file written with the reset")
				assert.Equal(t, "new record\n", string(b))
			} else {
				assert.Equal(t, summary(before), summary(got), "the old changes")
				assert.NoFileExists(t, filepath.Join(s2.dir, "record"))
			}
			assert.ElementsMatch(t, []string{MetaFile, ManifestFile, dstName}, filterOut(names, "record"), "nothing of the reset is left")

			// Settled, the session resets again.
			require.NoError(t, s2.Reset(layer, nil))
			got, err = s2.Changes()
			require.NoError(t, err)
			assert.Equal(t, summary(want), summary(got))
		})
	}
}

// stage leaves a whole reset stage of layer in session s, as Reset
// makes it before it swaps it in, with a file "record"; it returns the
// stage.
func stage(t *testing.T, s *Session, layer string) string {
	t.Helper()
	tmp, err := durable.TempDir(s.dir, resetPrefix)
	require.NoError(t, err)
	defer tmp.Close()
	require.NoError(t, s.stageReset(tmp.Path, layer, map[string][]byte{"record": []byte("new record\n")}))
	st := filepath.Join(s.dir, resetStage)
	require.NoError(t, tmp.Commit(st))
	return st
}

// filterOut is names without drop.
func filterOut(names []string, drop string) []string {
	var out []string
	for _, n := range names {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}

// A session New was making when its process died is not listed, and
// RemoveAbandoned removes it; one being made by a live process is left.
func TestNewKilledIsRemoved(t *testing.T) {
	base := t.TempDir()
	src := t.TempDir()
	dead, err := durable.TempDir(base, newPrefix)
	require.NoError(t, err)
	s := newSession(filepath.Join(base, "x"), filepath.Join(base, "x", dstName), src, "x", "")
	require.NoError(t, s.build(context.Background(), dead.Path, ""))
	dead.Close()
	live, err := durable.TempDir(base, newPrefix)
	require.NoError(t, err)
	defer live.Close()

	all, err := List(base)
	require.NoError(t, err)
	assert.Empty(t, all, "a session being made is not listed")
	gone, err := RemoveAbandoned(base)
	require.NoError(t, err)
	assert.Equal(t, []string{dead.Path}, gone)
	assert.NoDirExists(t, dead.Path)
	assert.DirExists(t, live.Path, "one its maker still builds")
}
