package sandboxes

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/boxsh/boxsh/client/session"
	"github.com/boxsh/boxsh/rpc"
)

// RecordFile is the record of a sandbox in its session's directory (beside
// the session's metadata, outside what the sandbox sees): what a server
// started again on the same state directory needs to host it again.
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
	// Ephemeral ones (a legacy session's) are removed at the next start.
	Ephemeral bool `json:"ephemeral,omitempty"`
}

// record writes the sandbox's RecordFile, once it has its name.
func (sb *Sandbox) record(m *Manager) {
	rec := record{Name: sb.name, From: sb.from, Disk: sb.diskMax, Ephemeral: sb.ephemeral}
	if sb.base != sb.from {
		rec.Base = sb.base
	}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(sb.sess.Dir(), RecordFile), b, 0o600); err != nil {
		m.cfg.Log.Warn("the sandbox will not be hosted again after a restart", "name", sb.name, "error", err)
	}
}

// forgetRecord removes a session's RecordFile (before it is discarded).
func forgetRecord(s *session.Session) {
	_ = os.Remove(filepath.Join(s.Dir(), RecordFile))
}

// adopt hosts again the sandboxes a previous server on the same state
// directory left (stopped, or killed): their files, in their sessions,
// with new processes. A session another server runs on (locked) is left
// alone, and so is one of another workspace; those of ephemeral sandboxes
// (legacy sessions', and warm ones never taken) are removed.
func (m *Manager) adopt(ctx context.Context) {
	all, err := session.List(m.cfg.SessionDir)
	if err != nil {
		m.cfg.Log.Warn("cannot list the sessions of earlier sandboxes", "error", err)
		return
	}
	for _, s := range all {
		rec, ok := readRecord(s)
		warm := !ok && s.Info().Label == "sandbox warm"
		if !ok && !warm || s.InUse() || !m.ours(s, rec.base()) {
			continue
		}
		if warm || rec.Ephemeral {
			m.removeSession(s)
			continue
		}
		if !validName.MatchString(rec.Name) || m.sbs[rec.Name] != nil {
			m.cfg.Log.Warn("an earlier sandbox's session is not hosted again: its name is taken or invalid", "name", rec.Name, "session", s.Dir())
			continue
		}
		if len(m.sbs) >= m.cfg.Max {
			m.cfg.Log.Warn("an earlier sandbox is not hosted again: the server hosts its maximum (--max-sandboxes)", "name", rec.Name, "session", s.Dir())
			continue
		}
		if err := m.adoptOne(ctx, s, rec); err != nil {
			m.cfg.Log.Warn("an earlier sandbox could not be started again", "name", rec.Name, "error", err)
		}
	}
}

// adoptOne starts sandbox rec on its session s.
func (m *Manager) adoptOne(ctx context.Context, s *session.Session, rec record) error {
	now := time.Now()
	sb := &Sandbox{name: rec.Name, from: rec.From, base: rec.base(), created: s.Info().Started, last: now, sess: s, diskMax: rec.Disk}
	if m.cfg.Disk > 0 && (sb.diskMax <= 0 || sb.diskMax > m.cfg.Disk) {
		sb.diskMax = m.cfg.Disk
	}
	if sb.base == rpc.FromEmpty {
		sb.empty = s.Src()
	}
	m.sbs[rec.Name] = sb
	if err := sb.start(ctx, m); err != nil {
		delete(m.sbs, rec.Name)
		sb.stop(false) // its files stay, for boxsh sessions
		return err
	}
	if err := s.Adopt(); err != nil {
		m.cfg.Log.Warn("the session's owner is not updated", "name", rec.Name, "error", err)
	}
	sb.mu.Lock()
	sb.ready = true
	sb.mu.Unlock()
	m.cfg.Log.Info("sandbox hosted again", "name", sb.name, "from", sb.from, "took", time.Since(now))
	return nil
}

// readRecord reads the RecordFile of session s.
func readRecord(s *session.Session) (record, bool) {
	var rec record
	b, err := os.ReadFile(filepath.Join(s.Dir(), RecordFile))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		return rec, false
	}
	return rec, rec.base() == rpc.FromWorkspace || rec.base() == rpc.FromEmpty
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
	case rpc.FromWorkspace:
		return s.Src() == m.cfg.Workspace
	case rpc.FromEmpty:
		return filepath.Dir(s.Src()) == m.cfg.EmptyDir
	}
	// A warm one's: either.
	return s.Src() == m.cfg.Workspace || filepath.Dir(s.Src()) == m.cfg.EmptyDir
}

// removeSession removes an ephemeral sandbox's session and its empty
// directory.
func (m *Manager) removeSession(s *session.Session) {
	forgetRecord(s)
	if err := s.Discard(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.cfg.Log.Warn("cannot remove an ephemeral sandbox's session", "session", s.Dir(), "error", err)
		return
	}
	if filepath.Dir(s.Src()) == m.cfg.EmptyDir {
		_ = os.RemoveAll(s.Src())
	}
}
