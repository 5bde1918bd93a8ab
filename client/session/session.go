// Package session manages copy-on-write sessions on a directory, and reviews
// and applies their changes.
//
// A session works on a directory, SRC. Commands run on a view of SRC whose
// writes land in another directory, DST (the upper directory of an overlay).
// Then:
//
//   - Changes lists what differs between SRC and DST, and Diff shows it as a
//     unified diff;
//   - Apply writes the changes into SRC, refusing paths the host changed since
//     the session started and never applying protected paths;
//   - Discard throws the session away.
//
// New makes a session and Open opens one. A session's files (its metadata, the
// manifest of SRC's state at the start, its lock) live beside DST. A running
// server holds the session's lock (Session.Lock), and List and Recover find
// the sessions under a base directory.
//
// Programs that only review and apply (boxsh changes, diff, apply) use this
// package alone. Package client adds Session.Start, which runs a sandboxed
// server on a session.
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/boxsh/boxsh/internal/durable"
	"github.com/boxsh/boxsh/internal/front/usage"
	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
)

// Names of a session's files, beside its DST.
const (
	// MetaFile is the session's metadata (Info as JSON).
	MetaFile = "boxsh-session.json"
	// ManifestFile records SRC's state when the session started.
	ManifestFile = "boxsh-manifest"
	// LockFile is locked (flock, Session.Lock) by whatever runs a server
	// on the session, such as the Go client's Session.Start. It stays
	// locked while the server runs, so that nothing else uses the session
	// meanwhile.
	LockFile = "boxsh-session.lock"
	// AuditFile is the audit log boxsh keeps by default for a sandbox on
	// the session (see boxsh audit).
	AuditFile = "boxsh-audit.jsonl"
	// dstName is the name of DST in a session directory of New.
	dstName = "dst"
)

// ErrInUse is returned by Session.Lock and Session.Discard (and matched
// with errors.Is) for a session whose server still runs.
var ErrInUse = errors.New("boxsh: session in use by a running server")

// Options configure New.
type Options struct {
	// Src is the directory the session works on (copy-on-write).
	Src string
	// BaseDir holds the sessions (default DefaultBaseDir()).
	BaseDir string
	// Label is free text kept in the metadata (who, what for).
	Label string
	// Layer, if set, is a layer made by SaveLayer from a session on the
	// same Src. The session starts with its changes and its manifest.
	Layer string
}

// Info is a session's metadata, kept as MetaFile beside its DST.
type Info struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Src is the directory the session works on; Dst the directory of its
	// changes (the overlay's upper directory).
	Src string `json:"src"`
	Dst string `json:"dst"`
	// Started is when the session was made.
	Started time.Time `json:"started"`
	// OwnerPID is the process that made the session. OwnerStart is that
	// process's start time, in clock ticks after boot (0 when unknown),
	// which tells it from a later process given the same PID.
	OwnerPID   int    `json:"owner_pid"`
	OwnerStart uint64 `json:"owner_start"`
	Label      string `json:"label,omitempty"`
}

// Session is a copy-on-write session.
//
// Commands run on a view of Src whose writes land in Dst. The changes are
// reviewed (Changes, Diff), then applied to Src (Apply) or thrown away
// (Discard).
type Session struct {
	dir  string // holds MetaFile and ManifestFile
	info Info
}

// DefaultBaseDir is where sessions are kept by default:
// $XDG_STATE_HOME/boxsh/sessions, or ~/.local/state/boxsh/sessions.
func DefaultBaseDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "boxsh", "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("session directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "boxsh", "sessions"), nil
}

// New makes a session on opts.Src under opts.BaseDir.
//
// The session is a directory, mode 0700, holding the metadata, DST, and a
// manifest of Src's state now, to detect what the host changes meanwhile.
// Start a sandbox on it with the Go client (client.Session.Start), or bind
// cow:Src:Dst for boxsh yourself.
func New(ctx context.Context, opts Options) (*Session, error) {
	src, err := cleanDir(opts.Src)
	if err != nil {
		return nil, fmt.Errorf("session source: %w", err)
	}
	base := opts.BaseDir
	if base == "" {
		if base, err = DefaultBaseDir(); err != nil {
			return nil, err
		}
	}
	if base, err = filepath.Abs(base); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("session directory: %w", err)
	}
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	if pathtree.Within(base, src) || pathtree.Within(src, base) {
		return nil, fmt.Errorf("session directory %s and source %s must not contain one another", base, src)
	}
	id := newID()
	dir := filepath.Join(base, id)
	// Built aside, then renamed into place: a session is whole or absent.
	tmp, err := durable.TempDir(base, newPrefix)
	if err != nil {
		return nil, fmt.Errorf("session directory: %w", err)
	}
	defer tmp.Close()
	s := newSession(dir, filepath.Join(dir, dstName), src, id, opts.Label)
	if err := s.build(ctx, tmp.Path, opts.Layer); err != nil {
		removeAll(tmp.Path)
		return nil, err
	}
	if err := tmp.Commit(dir); err != nil {
		removeAll(tmp.Path)
		return nil, fmt.Errorf("session directory: %w", err)
	}
	return s, nil
}

// newPrefix starts the name of a session directory New is building.
const newPrefix = ".new-"

// RemoveAbandoned removes the session directories under baseDir that a
// process killed in New left half-made, and returns their paths.
func RemoveAbandoned(baseDir string) ([]string, error) {
	dirs, err := durable.Abandoned(baseDir, newPrefix)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	var out []string
	for _, d := range dirs {
		if err := removeAll(d); err != nil {
			return out, fmt.Errorf("sessions: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// CreateMeta records a session for DST, the changes directory of a cow:SRC:DST
// bind made elsewhere, and returns it.
//
// boxsh --try makes such binds. The metadata and SRC's manifest go beside DST.
func CreateMeta(ctx context.Context, src, dst string) (*Session, error) {
	src, err := cleanDir(src)
	if err != nil {
		return nil, err
	}
	dst, err = filepath.Abs(dst)
	if err != nil {
		return nil, err
	}
	s := newSession(filepath.Dir(dst), dst, src, filepath.Base(filepath.Dir(dst)), "")
	if err := s.build(ctx, s.dir, ""); err != nil {
		return nil, err
	}
	return s, nil
}

// newSession is the session of directory dir, owned by this process.
func newSession(dir, dst, src, id, label string) *Session {
	return &Session{dir: dir, info: Info{
		Version: 1, ID: id, Src: src, Dst: dst, Started: time.Now().UTC(),
		OwnerPID: os.Getpid(), OwnerStart: processStart(os.Getpid()), Label: label,
	}}
}

// build writes the session's DST (from layer, if set), manifest and
// metadata in directory at, which becomes the session's directory.
func (s *Session) build(ctx context.Context, at, layer string) error {
	dst := filepath.Join(at, strings.TrimPrefix(s.info.Dst, s.dir))
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if layer != "" {
		if err := copyTree(layer, dst, true); err != nil {
			return fmt.Errorf("session: start from %s: %w", layer, err)
		}
		if err := copyFile(filepath.Join(filepath.Dir(layer), LayerManifest), filepath.Join(at, ManifestFile)); err != nil {
			return fmt.Errorf("session: start from %s: %w", layer, err)
		}
	} else {
		m, err := takeManifest(s.info.Src)
		if err != nil {
			return fmt.Errorf("session: record %s: %w", s.info.Src, err)
		}
		if err := m.save(filepath.Join(at, ManifestFile)); err != nil {
			return err
		}
	}
	return s.saveInfoIn(at)
}

// saveInfo writes the metadata atomically.
func (s *Session) saveInfo() error { return s.saveInfoIn(s.dir) }

// saveInfoIn writes the metadata atomically in directory dir.
func (s *Session) saveInfoIn(dir string) error {
	b, err := json.MarshalIndent(s.info, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(filepath.Join(dir, MetaFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("session metadata: %w", err)
	}
	return nil
}

// SetLabel changes the label kept in the session's metadata.
func (s *Session) SetLabel(label string) error {
	s.info.Label = label
	return s.saveInfo()
}

// Open opens the session whose DST, or whose directory (the one
// holding MetaFile), is path.
func Open(path string) (*Session, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{abs, filepath.Dir(abs)} {
		b, err := os.ReadFile(filepath.Join(dir, MetaFile))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("session metadata: %w", err)
		}
		var info Info
		if err := json.Unmarshal(b, &info); err != nil {
			return nil, fmt.Errorf("session metadata %s: %w", filepath.Join(dir, MetaFile), err)
		}
		if dir != abs && info.Dst != abs {
			continue // a metadata file of another DST in the same parent
		}
		if info.Src == "" || info.Dst == "" {
			return nil, fmt.Errorf("session metadata %s: no src or dst", filepath.Join(dir, MetaFile))
		}
		return &Session{dir: dir, info: info}, nil
	}
	return nil, fmt.Errorf("%s is not a boxsh session: no %s in it or beside it (sessions are made by boxsh --try, boxsh --rpc --try for an agent, and the Go client; a --bind cow: DST of your own has none)", path, MetaFile)
}

// List lists the sessions under baseDir (default
// DefaultBaseDir()), oldest first.
func List(baseDir string) ([]*Session, error) {
	if baseDir == "" {
		var err error
		if baseDir, err = DefaultBaseDir(); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(baseDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	var out []*Session
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue // a session being made (New), or no session
		}
		s, err := Open(filepath.Join(baseDir, e.Name()))
		if err != nil {
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].info.Started.Before(out[j].info.Started) })
	return out, nil
}

// Recover lists the sessions under baseDir whose owner process has died and
// that no server uses (see InUse).
//
// An owner dies by a crash or kill -9, for example. Such sessions' changes are
// all in DST, to Apply or Discard.
func Recover(baseDir string) ([]*Session, error) {
	all, err := List(baseDir)
	if err != nil {
		return nil, err
	}
	var out []*Session
	for _, s := range all {
		if !s.OwnerAlive() && !s.InUse() {
			out = append(out, s)
		}
	}
	return out, nil
}

// Info is the session's metadata.
func (s *Session) Info() Info { return s.info }

// ID names the session.
func (s *Session) ID() string { return s.info.ID }

// Src is the directory the session works on.
func (s *Session) Src() string { return s.info.Src }

// Dst is the directory of the session's changes.
func (s *Session) Dst() string { return s.info.Dst }

// Dir is the directory holding the session's metadata.
func (s *Session) Dir() string { return s.dir }

// OwnerAlive tells whether the process that made the session still runs.
func (s *Session) OwnerAlive() bool {
	return processAlive(s.info.OwnerPID, s.info.OwnerStart)
}

// InUse tells whether a server that took the session's lock (in this process
// or another) runs on the session now.
func (s *Session) InUse() bool { return sessionLocked(s.dir) }

// Adopt makes the calling process the session's owner (after recovering
// it, say).
func (s *Session) Adopt() error {
	s.info.OwnerPID, s.info.OwnerStart = os.Getpid(), processStart(os.Getpid())
	return s.saveInfo()
}

// Changes lists the session's changes (see the package function Changes).
func (s *Session) Changes() ([]Change, error) {
	return Changes(s.info.Src, s.info.Dst)
}

// Size is the disk space DST takes, in bytes (its blocks), walked
// beneath each directory's descriptor without following a link.
func (s *Session) Size() int64 {
	n, _, _ := usage.DiskWalk{MaxDepth: maxSizeDepth}.Size(s.info.Dst)
	return n
}

// maxSizeDepth bounds the levels of directories Size walks into.
const maxSizeDepth = 512

// Discard removes the session: DST, the overlay's work directory, the
// metadata and the session's audit log. SRC is not touched. It refuses a session a server runs on
// (ErrInUse).
func (s *Session) Discard() error {
	lock, err := lockSession(s.dir)
	if errors.Is(err, ErrInUse) {
		return fmt.Errorf("discard %s: %w", s.info.Dst, err)
	}
	if lock != nil {
		defer lock.Close()
	}
	work := policy.CowWorkDir(s.info.Dst)
	for _, p := range []string{s.info.Dst, work} {
		if err := removeAll(p); err != nil {
			return fmt.Errorf("discard: %w", err)
		}
	}
	os.Remove(filepath.Dir(work)) // .boxsh (or .boxsh-UID), when empty
	os.Remove(filepath.Join(s.dir, ManifestFile))
	os.Remove(filepath.Join(s.dir, LockFile))
	os.Remove(filepath.Join(s.dir, AuditFile))
	if err := os.Remove(filepath.Join(s.dir, MetaFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("discard: %w", err)
	}
	if s.dir != s.info.Src {
		os.Remove(s.dir) // when empty: a session directory, or --try's
	}
	return nil
}

// removeAll is os.RemoveAll (which removes beneath each directory's
// descriptor, never following a link) that first gives the owner rwx on
// the directories a sandbox closed (see unlockDirs).
func removeAll(path string) error {
	err := os.RemoveAll(path)
	if err == nil {
		return nil
	}
	unlockDirs(path)
	return os.RemoveAll(path)
}

// cleanDir is path made absolute, its symbolic links resolved; it must
// be a directory.
func cleanDir(path string) (string, error) {
	if path == "" {
		return "", errors.New("no directory given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	return abs, nil
}

// cleanRel is a path relative to SRC in the form of a Change's Path:
// slash-separated, without leading or trailing slashes; "" for SRC itself.
func cleanRel(p string) string {
	p = strings.Trim(filepath.ToSlash(filepath.Clean(p)), "/")
	if p == "." {
		return ""
	}
	return p
}

// newID is a session id: the time and 6 random hex digits.
func newID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Lock takes the session's lock, an exclusive flock of LockFile, for the life
// of a server on it.
//
// Closing the file releases the lock, and so does the kernel when the holder
// dies. Lock returns ErrInUse when another process holds it.
func (s *Session) Lock() (*os.File, error) { return lockSession(s.dir) }
