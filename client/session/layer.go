package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// Reset replaces the session's changes with those of layer (made by
// SaveLayer), and its manifest with the layer's. No sandbox may run on
// the session meanwhile.
func (s *Session) Reset(layer string) error {
	entries, err := os.ReadDir(s.info.Dst)
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	for _, e := range entries {
		if err := removeAll(filepath.Join(s.info.Dst, e.Name())); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
	}
	if err := copyTree(layer, s.info.Dst, true); err != nil {
		return fmt.Errorf("reset %s from %s: %w", s.info.Dst, layer, err)
	}
	return copyFile(filepath.Join(filepath.Dir(layer), LayerManifest), filepath.Join(s.dir, ManifestFile))
}

// ErrLayerChanged is the error of a copy of a layer that changed while
// it was copied: the copy would hold no state the layer ever had.
var ErrLayerChanged = errors.New("the layer changed while it was copied")

// copyAttempts is how many times CopyLayer copies a layer that changes
// during the copy before it gives up.
const copyAttempts = 3

// CopyLayer copies src, an overlay's upper directory, to dst, which must
// not exist: files (cloned where the file system can), directories,
// symbolic links, hard links between its files, whiteouts, fifos, modes,
// times and the user.* extended attributes (the overlay's among them).
// The copy never leaves src, whatever its writer renames or links
// meanwhile; a copy during which src changed is made again, and after
// copyAttempts the error is ErrLayerChanged.
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
