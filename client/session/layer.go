package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/boxsh/boxsh/internal/durable"
)

// Layers: a session's DST frozen as a read-only layer (a snapshot of a
// sandbox), and new sessions started from one. A layer is a copy of DST
// as the overlay left it, whiteouts (character devices 0/0, or files
// with the user.overlay.whiteout attribute) and opaque directories (the
// user.overlay.opaque attribute) included, with the manifest of the
// session it came from: a session started from it sees SRC with the
// layer's changes over it, and Apply still tells the host's changes since
// the first session began.

// LayerManifest is the name of a layer's manifest beside it, in the
// directory that holds it (see SaveLayer).
const LayerManifest = ManifestFile

// SaveLayer copies the session's changes (DST) to layer, which must not
// exist, and its manifest to LayerManifest beside layer. The caller
// pauses the sandbox on DST; should a write reach DST all the same, the
// copy is made again or fails with ErrLayerChanged (see CopyLayer).
func (s *Session) SaveLayer(layer string) error {
	if err := CopyLayer(s.info.Dst, layer); err != nil {
		return err
	}
	return copyFile(filepath.Join(s.dir, ManifestFile), filepath.Join(filepath.Dir(layer), LayerManifest))
}

// Reset replaces the session's changes with those of layer, and its manifest
// with the layer's.
//
// layer is made by SaveLayer. files are written in the session's directory
// along with them (name to contents). No sandbox may run on the session
// meanwhile.
//
// The new DST is built aside and synced first, then swapped in. So a process
// killed at any point leaves the old changes, or the new ones once Settle has
// finished the swap.
func (s *Session) Reset(layer string, files map[string][]byte) error {
	if _, err := s.Settle(); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	tmp, err := durable.TempDir(s.dir, resetPrefix)
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	defer tmp.Close()
	if err := s.stageReset(tmp.Path, layer, files); err != nil {
		removeAll(tmp.Path)
		return fmt.Errorf("reset %s from %s: %w", s.info.Dst, layer, err)
	}
	if err := tmp.Commit(filepath.Join(s.dir, resetStage)); err != nil {
		removeAll(tmp.Path)
		return fmt.Errorf("reset: %w", err)
	}
	if err := s.finishReset(); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	return nil
}

// Names in a session's directory while a Reset runs:
//
//   - resetPrefix starts the directory the Reset builds in;
//   - resetStage is that directory once whole, with its new DST as
//     stagedDst and the files to move into the session's directory beside
//     it;
//   - the old DST goes to replacedDst in it.
const (
	resetPrefix = ".reset-"
	resetStage  = ".reset"
	stagedDst   = "dst"
	replacedDst = ".old"
)

// stageReset builds, in directory at, the new DST from layer, the
// layer's manifest and files.
func (s *Session) stageReset(at, layer string, files map[string][]byte) error {
	if err := copyTree(layer, filepath.Join(at, stagedDst), false); err != nil {
		return err
	}
	if err := copyFile(filepath.Join(filepath.Dir(layer), LayerManifest), filepath.Join(at, ManifestFile)); err != nil {
		return err
	}
	for name, b := range files {
		if name != filepath.Base(name) || name == stagedDst || name == replacedDst || name == ManifestFile || strings.HasPrefix(name, ".") {
			return fmt.Errorf("reset: %q cannot be written with a reset", name)
		}
		if err := os.WriteFile(filepath.Join(at, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// finishReset swaps in the DST and files of a whole reset stage, and
// removes the stage with the old DST. Each step can be done again after
// a crash: the stage's DST is there until it is swapped in.
func (s *Session) finishReset() error {
	stage := filepath.Join(s.dir, resetStage)
	staged := filepath.Join(stage, stagedDst)
	if _, err := os.Lstat(staged); err == nil {
		if _, err := os.Lstat(s.info.Dst); err == nil {
			if err := os.Rename(s.info.Dst, filepath.Join(stage, replacedDst)); err != nil {
				return err
			}
		}
		if err := os.Rename(staged, s.info.Dst); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(stage)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == replacedDst {
			continue
		}
		if err := os.Rename(filepath.Join(stage, e.Name()), filepath.Join(s.dir, e.Name())); err != nil {
			return err
		}
	}
	if err := durable.SyncDir(s.dir); err != nil {
		return err
	}
	return removeAll(stage)
}

// Settle finishes or removes what a process killed during a Reset of the
// session left.
//
// A whole stage is swapped in, so the reset is done. A half-built one is
// removed, so the reset never happened. Settle says what it did, or "" for
// nothing.
func (s *Session) Settle() (string, error) {
	var did []string
	if _, err := os.Lstat(filepath.Join(s.dir, resetStage)); err == nil {
		if err := s.finishReset(); err != nil {
			return "", fmt.Errorf("finish a reset of %s: %w", s.info.Dst, err)
		}
		did = append(did, "a reset killed after it was staged was finished")
	}
	half, err := durable.Abandoned(s.dir, resetPrefix)
	if err != nil {
		return "", err
	}
	for _, d := range half {
		if err := removeAll(d); err != nil {
			return "", fmt.Errorf("remove a half-made reset of %s: %w", s.info.Dst, err)
		}
		did = append(did, "a half-made reset was removed")
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), durable.TempInfix) {
			if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil {
				return "", err
			}
			did = append(did, "a half-written "+strings.TrimPrefix(e.Name()[:strings.Index(e.Name(), durable.TempInfix)], ".")+" was removed")
		}
	}
	return strings.Join(did, "; "), nil
}

// ErrLayerChanged is the error of a copy of a layer that changed while it was
// copied. Such a copy would hold no state the layer ever had.
var ErrLayerChanged = errors.New("the layer changed while it was copied")

// copyAttempts is how many times CopyLayer copies a layer that changes
// during the copy before it gives up.
const copyAttempts = 3

// CopyLayer copies src, an overlay's upper directory, to dst, which must not
// exist.
//
// It copies files (cloned where the file system can), directories, symbolic
// links, hard links between its files, whiteouts, fifos, modes, times and the
// user.* extended attributes, the overlay's among them.
//
// The copy never leaves src, whatever its writer renames or links meanwhile. A
// copy during which src changed is made again; after copyAttempts tries, the
// error is ErrLayerChanged.
func CopyLayer(src, dst string) error {
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("copy layer: %s exists", dst)
	}
	var err error
	for range copyAttempts {
		if err = copyTree(src, dst, false); err == nil {
			return nil
		}
		_ = removeAll(dst)
		if !errors.Is(err, ErrLayerChanged) {
			break
		}
	}
	return fmt.Errorf("copy layer %s: %w", src, err)
}

// copyFile copies the regular file src to dst (mode 0600), atomically.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
