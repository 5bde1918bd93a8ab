package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/client/session"
	"github.com/boxsh/boxsh/internal/durable"
	"github.com/boxsh/boxsh/rpc"
)

// Snapshots. A snapshot is a sandbox's changes (its session's DST, the
// overlay's upper directory) copied while the sandbox is paused, with
// its session's manifest: SnapshotDir/NAME/layer, boxsh-manifest and
// snapshot.json. A sandbox from a snapshot, a fork and a restore start
// on a copy of the layer over the same base (the workspace, or an empty
// directory), so that every sandbox's changes stay one upper directory
// over its base: changes, diff and apply see them all, and a snapshot
// depends on no other (each can be deleted at any time).

// DefaultMaxSnapshots is the default bound on the snapshots of a server.
const DefaultMaxSnapshots = 64

// freezeTimeout bounds how long the processes of a sandbox may take to
// stop for a snapshot.
const freezeTimeout = 2 * time.Second

// snapshotMeta is the name of a snapshot's description in its directory.
const snapshotMeta = "snapshot.json"

// layerOf is the layer directory of snapshot snap.
func (m *Manager) layerOf(snap string) string {
	return filepath.Join(m.cfg.SnapshotDir, snap, "layer")
}

// snapshotInfo reads the description of snapshot snap.
func (m *Manager) snapshotInfo(snap string) (apitype.SnapshotInfo, error) {
	var info apitype.SnapshotInfo
	if err := checkName("snapshot", snap); err != nil {
		return info, err
	}
	b, err := os.ReadFile(filepath.Join(m.cfg.SnapshotDir, snap, snapshotMeta))
	if errors.Is(err, fs.ErrNotExist) {
		return info, &rpc.SandboxError{Status: http.StatusNotFound, Msg: "no snapshot " + snap}
	}
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("snapshot %s: %w", snap, err)
	}
	return info, nil
}

// Snapshot freezes sandbox name's files as snapshot snap
// (rpc.SandboxSnapshots).
func (m *Manager) Snapshot(name, snap string) (apitype.SnapshotInfo, error) {
	if err := checkName("snapshot", snap); err != nil {
		return apitype.SnapshotInfo{}, err
	}
	sb := m.Get(name)
	if sb == nil {
		return apitype.SnapshotInfo{}, &rpc.SandboxError{Status: http.StatusNotFound, Msg: "no sandbox " + name}
	}
	if err := m.reserveSnapshot(snap); err != nil {
		return apitype.SnapshotInfo{}, err
	}
	defer m.releaseSnapshot(snap)
	info, err := m.makeSnapshot(sb, snap)
	if err != nil {
		return apitype.SnapshotInfo{}, fmt.Errorf("snapshot %s of sandbox %s: %w", snap, name, err)
	}
	m.cfg.Log.Info("snapshot taken", "sandbox", name, "snapshot", snap, "paused_ms", info.PausedMS, "bytes", info.Bytes)
	return info, nil
}

// Names in SnapshotDir besides the snapshots':
//
//   - snapshotTemp starts the directory a snapshot is made in;
//   - forkTemp starts a fork's layer;
//   - deletedPrefix starts a snapshot being deleted.
const (
	snapshotTemp  = ".tmp-"
	forkTemp      = ".fork-"
	deletedPrefix = ".deleted-"
)

// reserveSnapshot takes name snap for a snapshot being made.
//
// It refuses when the name is taken (made or being made), or when the
// snapshots, those being made included, are at their limit.
func (m *Manager) reserveSnapshot(snap string) error {
	m.snaps.Lock()
	defer m.snaps.Unlock()
	list, err := m.Snapshots()
	if err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(m.cfg.SnapshotDir, snap)); err == nil || m.making[snap] {
		return &rpc.SandboxError{Status: http.StatusConflict, Msg: fmt.Sprintf("snapshot %s exists", snap)}
	}
	if making := m.beingMade(list); len(list)+making >= m.cfg.MaxSnapshots {
		return &rpc.SandboxError{Status: http.StatusTooManyRequests, Msg: fmt.Sprintf("limit reached: the server keeps %d snapshots (%d of them being made), its maximum (%d): delete one first", len(list)+making, making, m.cfg.MaxSnapshots)}
	}
	m.making[snap] = true
	return nil
}

// beingMade is the number of snapshots being made that are not yet in
// list (those made, by name).
func (m *Manager) beingMade(list []apitype.SnapshotInfo) int {
	n := len(m.making)
	for _, info := range list {
		if m.making[info.Name] {
			n--
		}
	}
	return n
}

// releaseSnapshot ends the reservation of name snap.
func (m *Manager) releaseSnapshot(snap string) {
	m.snaps.Lock()
	delete(m.making, snap)
	m.snaps.Unlock()
}

// makeSnapshot makes snapshot snap of sb.
//
// Its layer and description are made in a temporary directory, synced, and
// renamed to the snapshot's place. So a snapshot is whole or absent.
func (m *Manager) makeSnapshot(sb *Sandbox, snap string) (apitype.SnapshotInfo, error) {
	tmp, err := durable.TempDir(m.cfg.SnapshotDir, snapshotTemp)
	if err != nil {
		return apitype.SnapshotInfo{}, err
	}
	defer tmp.Close()
	info, err := sb.saveLayer(filepath.Join(tmp.Path, "layer"))
	if err == nil {
		info.Name = snap
		err = writeMeta(filepath.Join(tmp.Path, snapshotMeta), info)
	}
	if err == nil {
		err = tmp.Commit(filepath.Join(m.cfg.SnapshotDir, snap))
	}
	if err != nil {
		_ = removeTree(tmp.Path)
		return apitype.SnapshotInfo{}, err
	}
	return info, nil
}

// saveLayer copies the sandbox's changes to layer, its processes paused
// meanwhile.
func (sb *Sandbox) saveLayer(layer string) (apitype.SnapshotInfo, error) {
	sb.op.Lock()
	defer sb.op.Unlock()
	sb.swap.RLock()
	sup := sb.sup
	sb.swap.RUnlock()
	// Paused from before the first process is stopped to after the last
	// is continued.
	t0 := time.Now()
	resume, err := sup.Pause(freezeTimeout)
	if err != nil {
		return apitype.SnapshotInfo{}, &rpc.SandboxError{Status: http.StatusServiceUnavailable,
			Msg: fmt.Sprintf("snapshot of %s: its processes could not be paused (retry): %v", sb.name, err)}
	}
	err = sb.sess.SaveLayer(layer)
	resume()
	paused := time.Since(t0)
	if errors.Is(err, session.ErrLayerChanged) {
		// Something outside the pause changed the layer (a process
		// continued from outside the sandbox): no snapshot is torn.
		return apitype.SnapshotInfo{}, &rpc.SandboxError{Status: http.StatusServiceUnavailable,
			Msg: fmt.Sprintf("snapshot of %s: its files changed while they were copied, so none was kept (retry): %v", sb.name, err)}
	}
	if err != nil {
		return apitype.SnapshotInfo{}, err
	}
	return apitype.SnapshotInfo{
		Sandbox: sb.name, Base: sb.base, Created: t0.UTC(),
		Bytes: dirBytes(layer), PausedMS: float64(paused.Microseconds()) / 1000,
	}, nil
}

// writeMeta writes a snapshot's description.
func writeMeta(path string, info apitype.SnapshotInfo) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// dirBytes is the size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Snapshots lists the snapshots, by name (rpc.SandboxSnapshots).
func (m *Manager) Snapshots() ([]apitype.SnapshotInfo, error) {
	entries, err := os.ReadDir(m.cfg.SnapshotDir)
	if err != nil {
		return nil, fmt.Errorf("snapshots: %w", err)
	}
	out := []apitype.SnapshotInfo{}
	for _, e := range entries {
		if !e.IsDir() || !validName(e.Name()) {
			continue
		}
		if info, err := m.snapshotInfo(e.Name()); err == nil {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteSnapshot removes snapshot snap (rpc.SandboxSnapshots). Sandboxes
// started from it keep their files: they are copies.
func (m *Manager) DeleteSnapshot(snap string) error {
	if _, err := m.snapshotInfo(snap); err != nil {
		return err
	}
	m.snaps.Lock()
	defer m.snaps.Unlock()
	dir := filepath.Join(m.cfg.SnapshotDir, snap)
	gone := filepath.Join(m.cfg.SnapshotDir, deletedPrefix+snap)
	if err := os.Rename(dir, gone); err != nil {
		return fmt.Errorf("delete snapshot %s: %w", snap, err)
	}
	if err := removeTree(gone); err != nil {
		return fmt.Errorf("delete snapshot %s: %w", snap, err)
	}
	m.cfg.Log.Info("snapshot deleted", "snapshot", snap)
	return nil
}

// removeTree is os.RemoveAll that first gives the owner access to the
// directories a sandbox closed (mode 0).
func removeTree(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// Fork starts sandbox req.Name with sandbox name's files as they are now
// (rpc.SandboxSnapshots).
//
// It takes an unnamed snapshot, deleted once the new sandbox has its copy.
func (m *Manager) Fork(ctx context.Context, name string, req rpc.SandboxRequest) (rpc.Backend, apitype.SandboxInfo, error) {
	if err := checkName("sandbox", req.Name); err != nil {
		return nil, apitype.SandboxInfo{}, err
	}
	sb := m.Get(name)
	if sb == nil {
		return nil, apitype.SandboxInfo{}, &rpc.SandboxError{Status: http.StatusNotFound, Msg: "no sandbox " + name}
	}
	tmp, err := durable.TempDir(m.cfg.SnapshotDir, forkTemp)
	if err != nil {
		return nil, apitype.SandboxInfo{}, err
	}
	defer tmp.Close()
	defer removeTree(tmp.Path)
	layer := filepath.Join(tmp.Path, "layer")
	if _, err := sb.saveLayer(layer); err != nil {
		return nil, apitype.SandboxInfo{}, fmt.Errorf("fork of sandbox %s: %w", name, err)
	}
	req.From = apitype.FromForkPrefix + name
	nsb, err := m.createFrom(ctx, req, sb.base, layer)
	if err != nil {
		return nil, apitype.SandboxInfo{}, err
	}
	return nsb, nsb.Info(), nil
}

// Restore resets sandbox name to snapshot snap (rpc.SandboxSnapshots).
//
// The sandbox's boxsh-init and every process stop, its changes become the
// snapshot's, and a new boxsh-init starts. Calls sent meanwhile wait; those
// running end as with a restart.
func (m *Manager) Restore(name, snap string) (apitype.SandboxInfo, error) {
	info, err := m.snapshotInfo(snap)
	if err != nil {
		return apitype.SandboxInfo{}, err
	}
	sb := m.Get(name)
	if sb == nil {
		return apitype.SandboxInfo{}, &rpc.SandboxError{Status: http.StatusNotFound, Msg: "no sandbox " + name}
	}
	if info.Base != sb.base {
		return apitype.SandboxInfo{}, &rpc.SandboxError{Status: http.StatusConflict, Msg: fmt.Sprintf("snapshot %s is of a sandbox from %s; sandbox %s is from %s", snap, info.Base, name, sb.base)}
	}
	sb.op.Lock()
	defer sb.op.Unlock()
	sb.swap.Lock()
	defer sb.swap.Unlock()
	sb.halt()
	from := apitype.FromSnapshotPrefix + snap
	m.snaps.RLock()
	err = sb.sess.Reset(m.layerOf(snap), map[string][]byte{RecordFile: sb.recordOf(from)})
	m.snaps.RUnlock()
	if err == nil {
		// Its layer is a new directory.
		sb.disk.Close()
		sb.disk = nil
		err = sb.startDisk(m)
	}
	if err == nil {
		if err = sb.launch(m); err == nil {
			sb.wrap(m)
		}
	}
	if err != nil {
		// Its files stay, as a session boxsh sessions lists.
		m.mu.Lock()
		if m.sbs[name] == sb {
			delete(m.sbs, name)
		}
		m.mu.Unlock()
		sb.release(false)
		if m.cfg.Deleted != nil {
			m.cfg.Deleted(name)
		}
		return apitype.SandboxInfo{}, fmt.Errorf("restore sandbox %s to %s: %w (the sandbox is stopped; its files are kept as a session)", name, snap, err)
	}
	sb.mu.Lock()
	sb.from = from
	sb.mu.Unlock()
	m.cfg.Log.Info("sandbox restored", "sandbox", name, "snapshot", snap)
	return sb.Info(), nil
}
