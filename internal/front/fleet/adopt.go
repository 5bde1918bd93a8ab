package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/client/session"
	"github.com/boxsh/boxsh/internal/durable"
)

// RecordFile is the record of a sandbox in its session's directory.
//
// It sits beside the session's metadata, outside what the sandbox sees. It
// holds what a server started again on the same state directory needs to host
// the sandbox again.
const RecordFile = "sandbox.json"

// record is a sandbox's RecordFile.
type record struct {
	Name string `json:"name"`
	From string `json:"from"`
	// Base is where its files came from at first, when From is a
	// snapshot or a fork (see Sandbox.base).
	Base string `json:"base,omitempty"`
	// Disk is its disk limit in bytes (0: none).
	Disk int64 `json:"disk,omitempty"`
	// Ephemeral ones (an MCP session's) are removed at the next start.
	Ephemeral bool `json:"ephemeral,omitempty"`
}

// record writes the sandbox's RecordFile, atomically.
func (sb *Sandbox) record() error {
	if err := durable.WriteFile(filepath.Join(sb.sess.Dir(), RecordFile), sb.recordOf(sb.from), 0o600); err != nil {
		return fmt.Errorf("its record: %w", err)
	}
	return nil
}

// recordOf is the sandbox's RecordFile, with from as its From.
func (sb *Sandbox) recordOf(from string) []byte {
	rec := record{Name: sb.name, From: from, Disk: sb.diskMax, Ephemeral: sb.ephemeral}
	if sb.base != from {
		rec.Base = sb.base
	}
	b, _ := json.Marshal(rec)
	return b
}

// forgetRecord removes a session's RecordFile (before it is discarded).
func forgetRecord(s *session.Session) {
	_ = os.Remove(filepath.Join(s.Dir(), RecordFile))
}

// adopt hosts again the sandboxes that a previous server on the same state
// directory left, stopped or killed.
//
// Their files stay in their sessions; they get new processes and are served as
// new ones are (admit). adopt leaves alone a session another server runs on
// (locked), and one of another workspace. It removes the sessions of ephemeral
// sandboxes (MCP sessions', and warm ones never taken), and those a killed
// server left half-made (see settleSnapshots and session.Session.Settle).
func (m *Manager) adopt(ctx context.Context) {
	m.settleSnapshots()
	if gone, err := session.RemoveAbandoned(m.cfg.SessionDir); err != nil {
		m.cfg.Log.Warn("cannot remove half-made sessions", "error", err)
	} else {
		for _, d := range gone {
			m.cfg.Log.Warn("removed a session a killed server left half-made", "session", d)
		}
	}
	all, err := session.List(m.cfg.SessionDir)
	if err != nil {
		m.cfg.Log.Warn("cannot list the sessions of earlier sandboxes", "error", err)
		return
	}
	for _, s := range all {
		if !m.sandboxSession(s) || s.InUse() {
			continue
		}
		if did, err := s.Settle(); err != nil {
			m.cfg.Log.Warn("an earlier sandbox's session is left as it is", "session", s.Dir(), "error", err)
			continue
		} else if did != "" {
			m.cfg.Log.Warn("settled an earlier sandbox's session: "+did, "session", s.Dir())
		}
		rec, err := readRecord(s)
		switch {
		case errors.Is(err, fs.ErrNotExist) && s.OwnerAlive():
			continue // being made by a server that runs
		case errors.Is(err, fs.ErrNotExist) && s.Info().Label == sessionLabel(""):
			m.removeSession(s, "") // a warm one, never taken
			continue
		case errors.Is(err, fs.ErrNotExist):
			m.removeSession(s, "removed the session of a sandbox whose making did not end (it has no record)")
			continue
		case err != nil:
			m.cfg.Log.Warn("an earlier sandbox's session is not hosted again", "session", s.Dir(), "error", err)
			continue
		case rec.Ephemeral || !m.ours(s, rec.base()):
			if rec.Ephemeral && m.ours(s, rec.base()) {
				m.removeSession(s, "")
			}
			continue
		}
		if !validName(rec.Name) {
			m.cfg.Log.Warn("an earlier sandbox's session is not hosted again: its name is invalid", "name", rec.Name, "session", s.Dir())
			continue
		}
		if err := m.adoptOne(ctx, s, rec); err != nil {
			m.cfg.Log.Warn("an earlier sandbox could not be hosted again", "name", rec.Name, "session", s.Dir(), "error", err)
		}
	}
	m.settleEmptyDirs()
}

// sandboxSession tells whether session s is of a sandbox of this
// server: labelled as one (sessionLabel), on its workspace or one of its
// empty directories.
func (m *Manager) sandboxSession(s *session.Session) bool {
	return strings.HasPrefix(s.Info().Label, labelPrefix) && m.ours(s, "")
}

// adoptOne hosts sandbox rec again on its session s.
func (m *Manager) adoptOne(ctx context.Context, s *session.Session, rec record) error {
	sb := &Sandbox{name: rec.Name, from: rec.From, base: rec.base(), created: s.Info().Started, last: time.Now(), sess: s, diskMax: rec.Disk}
	if m.cfg.Disk > 0 && (sb.diskMax <= 0 || sb.diskMax > m.cfg.Disk) {
		sb.diskMax = m.cfg.Disk
	}
	if sb.base == apitype.FromEmpty {
		sb.empty = s.Src()
	}
	return m.admit(ctx, sb, admitAdopted)
}

// readRecord reads the RecordFile of session s: fs.ErrNotExist when it
// has none.
func readRecord(s *session.Session) (record, error) {
	var rec record
	b, err := os.ReadFile(filepath.Join(s.Dir(), RecordFile))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", RecordFile, err)
	}
	if b := rec.base(); b != apitype.FromWorkspace && b != apitype.FromEmpty {
		return rec, fmt.Errorf("%s: a sandbox from %q, not %q or %q", RecordFile, b, apitype.FromWorkspace, apitype.FromEmpty)
	}
	return rec, nil
}

// base is where the sandbox's files came from at first.
func (rec record) base() string {
	if rec.Base != "" {
		return rec.Base
	}
	return rec.From
}

// ours tells whether session s is of this server's sandboxes: a view of
// its workspace, or of an empty directory of its own.
func (m *Manager) ours(s *session.Session, from string) bool {
	switch from {
	case apitype.FromWorkspace:
		return s.Src() == m.cfg.Workspace
	case apitype.FromEmpty:
		return filepath.Dir(s.Src()) == m.cfg.EmptyDir
	}
	// A warm one's: either.
	return s.Src() == m.cfg.Workspace || filepath.Dir(s.Src()) == m.cfg.EmptyDir
}

// removeSession removes a sandbox's session and its empty directory,
// saying why (if why is set).
func (m *Manager) removeSession(s *session.Session, why string) {
	forgetRecord(s)
	if err := s.Discard(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.cfg.Log.Warn("cannot remove an earlier sandbox's session", "session", s.Dir(), "error", err)
		return
	}
	if filepath.Dir(s.Src()) == m.cfg.EmptyDir {
		_ = os.RemoveAll(s.Src())
	}
	if why != "" {
		m.cfg.Log.Warn(why, "session", s.Dir())
	}
}

// settleSnapshots removes what a killed server left in the snapshot directory.
//
// That is snapshots and forks' layers it was making, snapshots it was
// deleting, and directories of snapshots without their description.
func (m *Manager) settleSnapshots() {
	for _, t := range []struct{ prefix, why string }{
		{snapshotTemp, "removed a snapshot a killed server was making"},
		{forkTemp, "removed the layer of a fork a killed server was making"},
	} {
		dirs, err := durable.Abandoned(m.cfg.SnapshotDir, t.prefix)
		if err != nil {
			m.cfg.Log.Warn("cannot list half-made snapshots", "error", err)
			return
		}
		for _, d := range dirs {
			m.removeLeft(d, t.why)
		}
	}
	entries, err := os.ReadDir(m.cfg.SnapshotDir)
	if err != nil {
		m.cfg.Log.Warn("cannot list half-made snapshots", "error", err)
		return
	}
	for _, e := range entries {
		d := filepath.Join(m.cfg.SnapshotDir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), deletedPrefix):
			m.removeLeft(d, "finished the deletion of a snapshot a killed server was deleting")
		case e.IsDir() && validName(e.Name()):
			if _, err := os.Lstat(filepath.Join(d, snapshotMeta)); errors.Is(err, fs.ErrNotExist) {
				m.removeLeft(d, "removed a snapshot without its description ("+snapshotMeta+")")
			}
		}
	}
}

// removeLeft removes the tree dir a killed server left, saying why.
func (m *Manager) removeLeft(dir, why string) {
	if err := removeTree(dir); err != nil {
		m.cfg.Log.Warn("cannot remove what a killed server left", "path", dir, "error", err)
		return
	}
	m.cfg.Log.Warn(why, "path", dir)
}

// settleEmptyDirs removes the empty directories (apitype.FromEmpty) no
// session works on: those of creates killed before their session was
// made. One a file was applied to is kept.
func (m *Manager) settleEmptyDirs() {
	entries, err := os.ReadDir(m.cfg.EmptyDir)
	if err != nil {
		return
	}
	all, err := session.List(m.cfg.SessionDir)
	if err != nil {
		return
	}
	used := map[string]bool{}
	for _, s := range all {
		used[s.Src()] = true
	}
	for _, e := range entries {
		d := filepath.Join(m.cfg.EmptyDir, e.Name())
		if !e.IsDir() || used[d] {
			continue
		}
		if os.Remove(d) == nil {
			m.cfg.Log.Warn("removed the empty directory of a sandbox whose making did not end", "path", d)
		}
	}
}
