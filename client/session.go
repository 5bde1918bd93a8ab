package client

import (
	"context"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"github.com/boxsh/boxsh/client/session"
	"github.com/boxsh/boxsh/internal/pathtree"
)

// Copy-on-write sessions are package client/session's; the client's names
// for them stay, and the client's Session adds Start, which runs a server on
// one.

type (
	// SessionOptions configure NewSession (session.Options).
	SessionOptions = session.Options
	// SessionInfo is a session's metadata (session.Info).
	SessionInfo = session.Info
	// Change is one difference between a session's DST and SRC.
	Change = session.Change
	// Kind is what a Change does.
	Kind = session.Kind
	// FileType is the type of a file in a Change.
	FileType = session.FileType
	// ApplyOptions configure Session.Apply.
	ApplyOptions = session.ApplyOptions
	// ApplyResult is what Session.Apply applied, refused and narrowed.
	ApplyResult = session.ApplyResult
	// Refusal is a change Session.Apply refused, and why.
	Refusal = session.Refusal
)

// The kinds of Change and the types of file (see package session).
const (
	Added          = session.Added
	Modified       = session.Modified
	Deleted        = session.Deleted
	DirReplaced    = session.DirReplaced
	TypeChanged    = session.TypeChanged
	ModeChanged    = session.ModeChanged
	SymlinkChanged = session.SymlinkChanged

	TypeFile    = session.TypeFile
	TypeDir     = session.TypeDir
	TypeSymlink = session.TypeSymlink
)

// Names of a session's files, beside its DST (see package session).
const (
	MetaFile     = session.MetaFile
	ManifestFile = session.ManifestFile
	LockFile     = session.LockFile
	AuditFile    = session.AuditFile
)

// ErrSessionInUse is returned by Session.Start and Session.Discard (and
// matched with errors.Is) for a session whose server still runs.
var ErrSessionInUse = session.ErrInUse

// Session is a copy-on-write session (a *session.Session: Changes, Diff,
// Apply, Discard and the rest) on which Start runs a sandboxed server.
type Session struct {
	*session.Session
}

// wrap gives sessions the client's Start.
func wrap(s *session.Session, err error) (*Session, error) {
	if err != nil {
		return nil, err
	}
	return &Session{s}, nil
}

// wrapAll is wrap for a list.
func wrapAll(list []*session.Session, err error) ([]*Session, error) {
	if err != nil {
		return nil, err
	}
	out := make([]*Session, len(list))
	for i, s := range list {
		out[i] = &Session{s}
	}
	return out, nil
}

// DefaultBaseDir is where sessions are kept by default (session.DefaultBaseDir).
func DefaultBaseDir() (string, error) { return session.DefaultBaseDir() }

// NewSession makes a session on opts.Src (session.New). Start a sandbox on
// it with Session.Start, or pass Session.Bind to boxsh yourself.
func NewSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	return wrap(session.New(ctx, opts))
}

// CreateSessionMeta records a session for DST, the changes directory of a
// cow:SRC:DST bind made elsewhere (session.CreateMeta).
func CreateSessionMeta(ctx context.Context, src, dst string) (*Session, error) {
	return wrap(session.CreateMeta(ctx, src, dst))
}

// OpenSession opens the session whose DST or directory is path
// (session.Open).
func OpenSession(path string) (*Session, error) { return wrap(session.Open(path)) }

// ListSessions lists the sessions under baseDir (session.List).
func ListSessions(baseDir string) ([]*Session, error) { return wrapAll(session.List(baseDir)) }

// RecoverSessions lists the sessions under baseDir whose owner died and
// that no server uses (session.Recover).
func RecoverSessions(baseDir string) ([]*Session, error) {
	return wrapAll(session.Recover(baseDir))
}

// Changes lists the changes of DST, a cow bind's changes directory, against
// SRC (session.Changes).
func Changes(src, dst string) ([]Change, error) { return session.Changes(src, dst) }

// Diff is the unified diff of path's changes in DST against SRC, or of
// every change when path is "" (session.Diff).
func Diff(src, dst, path string) (string, error) { return session.Diff(src, dst, path) }

// QuotePath quotes a file name for a listing, as git does with
// core.quotePath (session.QuotePath).
func QuotePath(name string) string { return session.QuotePath(name) }

// EscapeControls escapes the control characters of a message
// (session.EscapeControls).
func EscapeControls(s string) string { return session.EscapeControls(s) }

// SessionsSupported tells why sessions cannot work here, or nil
// (session.Supported).
func SessionsSupported() error { return session.Supported() }

// Bind is the sandbox bind of the session: cow:Src:Dst. Inside the
// sandbox, Src's files are seen at Dst.
func (s *Session) Bind() Bind { return Bind{Mode: CopyOnWrite, Src: s.Src(), Dst: s.Dst()} }

// Start starts a sandboxed server on the session.
//
// The server gets opts with Sandbox set and the session's bind added. When
// opts.Dir is empty, Src is the working directory, so that commands start in
// the session's view of it. The session is locked while the server runs: a
// second Start, Discard and RecoverSessions refuse it (ErrSessionInUse) until
// the server has exited.
//
// On Linux the sandbox shows the session's view of the project at the
// project's own path, Src (--in-place), and at Dst. Commands start in Src,
// `pwd` prints it, and tool results and diffs name it.
//
// On macOS, whose sandbox has no mounts, the view is Dst only, the session's
// clone. Commands start there. The Client's file calls (Read, ReadFile, Write,
// WriteString, Edit, List, Stat) and ExecRequest.Cwd take the project's host
// path, translated to the same place in Dst, and the paths List and Stat
// answer are translated back. Command lines are not translated: write them
// with relative paths.
func (s *Session) Start(ctx context.Context, opts Options) (*Client, error) {
	lock, err := s.Lock()
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", s.Dst(), err)
	}
	opts.Sandbox = true
	opts.Binds = append(append([]Bind{}, opts.Binds...), s.Bind())
	if opts.Dir == "" {
		opts.Dir = s.Src()
	}
	if goruntime.GOOS == "linux" {
		// The project at its own path: no path to translate.
		opts.InPlace = true
		return start(ctx, opts, lock, nil)
	}
	return start(ctx, opts, lock, &pathView{src: s.Src(), dst: s.Dst()})
}

// pathView maps the host path of a session's project (src) to where its
// sandbox shows the session's view of it (dst).
type pathView struct{ src, dst string }

// in is the sandbox path of p: p itself unless it is src or in it.
func (v *pathView) in(p string) string {
	if v == nil || !filepath.IsAbs(p) {
		return p
	}
	if c := filepath.Clean(p); pathtree.Within(c, v.src) {
		return v.dst + strings.TrimPrefix(c, v.src)
	}
	return p
}

// out is the host path of the sandbox path p: p itself unless it is dst or
// in it.
func (v *pathView) out(p string) string {
	if v == nil || !filepath.IsAbs(p) {
		return p
	}
	if c := filepath.Clean(p); pathtree.Within(c, v.dst) {
		return v.src + strings.TrimPrefix(c, v.dst)
	}
	return p
}
