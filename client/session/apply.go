package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/boxsh/boxsh/internal/pathtree"
)

// ApplyOptions configure Session.Apply.
type ApplyOptions struct {
	// DryRun reports what would be applied, refused and skipped, and
	// changes nothing.
	DryRun bool
	// Paths limits Apply to these paths (relative to SRC, with what is
	// below them); empty: every change.
	Paths []string
	// Protect adds entries to the protected list for this Apply. They are
	// matched as the policy's filesystem.protect is: names, relative
	// paths, and directories ending in "/", at any depth.
	Protect []string
}

// Refusal is a change Apply did not make, and why. Reason names paths
// as QuotePath does and holds no control characters.
type Refusal struct {
	Change Change `json:"change"`
	Reason string `json:"reason"`
}

// ApplyResult is what Apply did (or, with DryRun, would do).
type ApplyResult struct {
	// Applied are the changes written to SRC.
	Applied []Change `json:"applied"`
	// Conflicts are changes to paths the host changed in SRC since the
	// session started; SRC keeps the host's version.
	Conflicts []Refusal `json:"conflicts,omitempty"`
	// Skipped are the changes Apply never makes:
	//
	//   - protected paths: git control files, agent and IDE settings,
	//     shell start-up files;
	//   - files with setuid or setgid bits, or owned by another user;
	//   - devices, fifos and sockets;
	//   - what is inside a directory not applied.
	Skipped []Refusal `json:"skipped,omitempty"`
	// Failed are changes that could not be written (the error says why).
	Failed []Refusal `json:"failed,omitempty"`
	// Narrowed are applied changes whose mode Apply wrote without bits
	// the sandbox set (Reason gives the mode written). Apply never adds
	// write for the group or others, setuid, setgid or sticky bits that
	// SRC's entry had not. A new entry keeps group or other write only
	// where its parent directory in SRC has it and is not sticky, and a
	// new directory setgid only in a setgid directory; setuid and sticky
	// bits never.
	Narrowed []Refusal `json:"narrowed,omitempty"`
}

// Apply writes the session's changes into SRC, deletions included.
//
// Each file is written beside its destination and renamed over it. Symbolic
// links in SRC are never followed. A path the host changed in SRC since the
// session started is refused as a conflict.
//
// The applied paths are recorded as SRC's new state, so a later Apply does not
// see them as the host's changes. Modes are applied without opening SRC to
// other users (see ApplyResult.Narrowed).
func (s *Session) Apply(opts ApplyOptions) (*ApplyResult, error) {
	unlock, err := lockFile(filepath.Join(s.dir, MetaFile))
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, err := loadManifest(filepath.Join(s.dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	changes, err := s.Changes()
	if err != nil {
		return nil, err
	}
	res, err := applyChanges(s.info.Src, s.info.Dst, m, changes, opts)
	if err != nil {
		return nil, err
	}
	if !opts.DryRun && len(res.Applied) > 0 {
		if err := m.save(filepath.Join(s.dir, ManifestFile)); err != nil {
			return res, err
		}
	}
	return res, nil
}

// applier applies changes to SRC (see applyChanges).
type applier struct {
	src, dst string
	m        manifest
	opts     ApplyOptions
	res      *ApplyResult
	fs       *treeFS // nil on a dry run
	// blocked are directories not applied: what is below them is not
	// applied either.
	blocked []string
	// dirModes are the modes of directories made, set once their
	// contents are in (a read-only directory would refuse them).
	dirModes []dirMode
	// made are the modes (kernel bits) of the directories this Apply
	// makes, which new entries below them are held to.
	made map[string]uint32
}

type dirMode struct {
	rel  string
	mode uint32 // kernel bits
}

// applyChanges applies changes (from Changes(src, dst)) to src, checking
// each against m, SRC's state when the session started, which it updates.
func applyChanges(src, dst string, m manifest, changes []Change, opts ApplyOptions) (*ApplyResult, error) {
	a := &applier{src: src, dst: dst, m: m, opts: opts, res: &ApplyResult{}, made: map[string]uint32{}}
	if !opts.DryRun {
		t, err := openTree(src, dst)
		if err != nil {
			return nil, err
		}
		defer t.close()
		a.fs = t
	}
	for _, c := range changes {
		if !a.selected(c.Path) {
			continue
		}
		a.one(c)
	}
	if a.fs != nil {
		for i := len(a.dirModes) - 1; i >= 0; i-- {
			d := a.dirModes[i]
			if err := a.fs.chmod(d.rel, d.mode); err != nil {
				a.res.Failed = append(a.res.Failed, Refusal{Change: Change{Path: d.rel, Kind: ModeChanged, Type: TypeDir, Mode: fileMode(d.mode)}, Reason: EscapeControls(err.Error())})
				continue
			}
			if fi, err := os.Lstat(filepath.Join(src, filepath.FromSlash(d.rel))); err == nil {
				m[d.rel] = stateOf(fi)
			}
		}
	}
	return a.res, nil
}

// selected tells whether rel is in opts.Paths (or below one).
func (a *applier) selected(rel string) bool {
	if len(a.opts.Paths) == 0 {
		return true
	}
	for _, p := range a.opts.Paths {
		if p = cleanRel(p); p == "" || pathtree.Within(rel, p) {
			return true
		}
	}
	return false
}

// one applies (or refuses) one change.
func (a *applier) one(c Change) {
	for _, b := range a.blocked {
		if pathtree.Within(c.Path, b) {
			a.refuse(&a.res.Skipped, c, "inside "+QuotePath(b)+", which is not applied")
			return
		}
	}
	var below removedTree
	if removesTree(c) {
		below = a.scanRemoved(c.Path)
	}
	if reason, ok := a.protected(c, below); ok {
		a.refuse(&a.res.Skipped, c, reason)
		return
	}
	if reason, ok := a.unsafe(c); ok {
		a.refuse(&a.res.Skipped, c, reason)
		return
	}
	if reason, ok := a.conflict(c, below); ok {
		a.refuse(&a.res.Conflicts, c, reason)
		return
	}
	mode, allowed, hasMode := a.mode(c)
	if a.fs != nil {
		if err := a.write(c, mode, allowed); err != nil {
			a.refuse(&a.res.Failed, c, EscapeControls(err.Error()))
			return
		}
		a.record(c)
	}
	if hasMode && c.Type == TypeDir && (c.Kind == Added || c.Kind == TypeChanged) {
		a.made[c.Path] = mode
	}
	if hasMode && mode != unixPerm(c.Mode) {
		a.res.Narrowed = append(a.res.Narrowed, Refusal{Change: c, Reason: fmt.Sprintf(
			"mode %s applied as %s: apply adds no write for the group or others, set-ID or sticky bit SRC had not",
			modeString(c.Mode), modeString(fileMode(mode)))})
	}
	a.res.Applied = append(a.res.Applied, c)
}

// mode returns the mode (kernel bits) that c gives its path in SRC, and the
// guarded bits it may have (see applyMode).
//
// ok is false when c sets no mode: deletions, symbolic links, content-only
// changes. For a file, the mode is the one DST has when it is copied, held to
// allowed.
func (a *applier) mode(c Change) (mode, allowed uint32, ok bool) {
	switch {
	case c.Kind == Deleted || c.Type == TypeSymlink:
		return 0, 0, false
	case c.Kind == Added || c.Kind == TypeChanged:
		allowed = newAllowed(a.parentMode(c.Path), c.Type == TypeDir)
	default:
		allowed = unixPerm(c.OldMode)
	}
	if c.Kind == DirReplaced && c.Mode == c.OldMode {
		return 0, allowed, false
	}
	return applyMode(unixPerm(c.Mode), allowed), allowed, true
}

// parentMode returns the mode (kernel bits) of rel's parent directory in SRC
// once applied.
//
// That is the mode of one this Apply makes, else SRC's. It is 0, the
// strictest, when it cannot be read.
func (a *applier) parentMode(rel string) uint32 {
	dir := path.Dir(rel)
	if m, ok := a.made[dir]; ok {
		return m
	}
	fi, err := os.Lstat(filepath.Join(a.src, filepath.FromSlash(dir)))
	if err != nil || !fi.IsDir() {
		return 0
	}
	return unixPerm(fi.Mode())
}

// refuse records c in list and blocks what is below it.
func (a *applier) refuse(list *[]Refusal, c Change, reason string) {
	*list = append(*list, Refusal{Change: c, Reason: reason})
	a.blocked = append(a.blocked, c.Path)
}

// removesTree tells whether c removes a directory of SRC with its
// contents.
func removesTree(c Change) bool {
	return c.OldType == TypeDir && (c.Kind == Deleted || c.Kind == TypeChanged)
}

// removedTree is what stops a change that removes a directory of SRC with its
// contents.
//
// It holds the first protected path inside the directory, and the first that
// the host created or changed since the session started; "" for none.
type removedTree struct {
	protected, changed string
}

// scanRemoved walks SRC's directory rel once for removedTree.
func (a *applier) scanRemoved(rel string) removedTree {
	var t removedTree
	_ = walkStates(a.src, rel, func(rel string, st fileState) error {
		if t.protected == "" {
			if r, ok := protectedReason(a.src, rel, a.opts.Protect); ok {
				t.protected = "it would remove " + QuotePath(rel) + ": " + r
			}
		}
		if t.changed == "" {
			if rec, had := a.m[rel]; !had {
				t.changed = QuotePath(rel) + " was created in SRC since the session started"
			} else if !rec.same(st) {
				t.changed = QuotePath(rel) + " was changed in SRC since the session started"
			}
		}
		if t.protected != "" && t.changed != "" {
			return errStop
		}
		return nil
	})
	return t
}

// protected tells whether c touches a protected path: the path itself,
// a gitfile, or (for a change removing a directory) one inside it
// (below).
func (a *applier) protected(c Change, below removedTree) (string, bool) {
	if reason, ok := protectedReason(a.src, c.Path, a.opts.Protect); ok {
		return reason, true
	}
	return below.protected, below.protected != ""
}

var errStop = errors.New("stop")

// unsafe tells whether the DST side of c must not be applied: files of
// another user, files with setuid or setgid bits, devices, fifos and
// sockets.
func (a *applier) unsafe(c Change) (string, bool) {
	if c.Kind == Deleted {
		return "", false
	}
	fi, err := os.Lstat(filepath.Join(a.dst, filepath.FromSlash(c.Path)))
	if err != nil {
		return "cannot read it in DST: " + EscapeControls(err.Error()), true
	}
	if uid, _ := ownerRdev(fi); uid != uint32(os.Getuid()) {
		return fmt.Sprintf("owned by uid %d in DST, not by you", uid), true
	}
	if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 && !fi.IsDir() {
		// (A directory's are held to SRC's, as its other bits: see
		// applyMode.)
		return "setuid or setgid bits", true
	}
	if typeOf(fi.Mode()) == TypeOther {
		return "not a file, directory or symbolic link (" + fi.Mode().Type().String() + ")", true
	}
	return "", false
}

// conflict tells whether the host changed what c would change in SRC
// since the session started (for a change removing a directory: also
// inside it, below).
func (a *applier) conflict(c Change, below removedTree) (string, bool) {
	if reason, ok := a.changedInSrc(c.Path); ok {
		return reason, true
	}
	return below.changed, below.changed != ""
}

// changedInSrc tells whether SRC's rel differs from the manifest.
func (a *applier) changedInSrc(rel string) (string, bool) {
	rec, had := a.m[rel]
	fi, err := os.Lstat(filepath.Join(a.src, filepath.FromSlash(rel)))
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return "cannot check it in SRC: " + EscapeControls(err.Error()), true
	case err != nil && had:
		return "deleted in SRC since the session started", true
	case err == nil && !had:
		return "created in SRC since the session started", true
	case err == nil && !rec.same(stateOf(fi)):
		return "changed in SRC since the session started", true
	}
	return "", false
}

// write makes change c in SRC, giving its path mode (kernel bits; a
// copied file: DST's mode held to allowed).
func (a *applier) write(c Change, mode, allowed uint32) error {
	t := a.fs
	if removesTree(c) || (c.Kind == TypeChanged && c.Type == TypeDir) {
		if err := t.remove(c.Path); err != nil {
			return err
		}
	}
	switch {
	case c.Kind == Deleted:
		if c.OldType != TypeDir {
			return t.remove(c.Path)
		}
		return nil
	case c.Kind == ModeChanged:
		return t.chmod(c.Path, mode)
	case c.Kind == DirReplaced:
		// Its contents follow as changes of their own.
		if c.Mode != c.OldMode {
			return t.chmod(c.Path, mode)
		}
		return nil
	case c.Type == TypeDir:
		if err := t.mkdir(c.Path); err != nil {
			return err
		}
		a.dirModes = append(a.dirModes, dirMode{c.Path, mode})
		return nil
	case c.Type == TypeSymlink:
		return t.copySymlink(c.Path)
	case c.Type == TypeFile:
		return t.copyFile(c.Path, allowed)
	}
	return fmt.Errorf("cannot apply a %s", c.Type)
}

// record updates the manifest for an applied change.
func (a *applier) record(c Change) {
	if removesTree(c) {
		for rel := range a.m {
			if pathtree.Below(rel, c.Path) {
				delete(a.m, rel)
			}
		}
	}
	fi, err := os.Lstat(filepath.Join(a.src, filepath.FromSlash(c.Path)))
	if err != nil {
		delete(a.m, c.Path)
		return
	}
	a.m[c.Path] = stateOf(fi)
}
