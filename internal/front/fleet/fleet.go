// Package fleet hosts many sandboxes in one server (boxsh --rpc --listen
// --sandboxes).
//
// A Manager starts each sandbox by name, with its own boxsh-init, worker pool,
// network namespace and proxy. A sandbox runs on a copy-on-write session of
// the server's workspace or of an empty directory. The Manager stops it when
// it is deleted, when it has been idle too long, or when the server ends.
// Package rpc gives each sandbox an endpoint (rpc.SandboxRouter).
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/client/session"
	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/rpc"
	"github.com/boxsh/boxsh/runtime"
	"github.com/boxsh/boxsh/runtime/host"
)

// Config configures a Manager.
type Config struct {
	// Runtime is every sandbox's boxsh-init: the sandbox (enabled), the
	// policy, the worker pool. Each sandbox adds the bind of its session,
	// and starts in its view of Workspace.
	Runtime runtime.Config
	// Workspace is the directory a sandbox from apitype.FromWorkspace sees
	// copy-on-write.
	Workspace string
	// SessionDir holds the sessions (default session.DefaultBaseDir()).
	// EmptyDir holds the empty directories of sandboxes from
	// apitype.FromEmpty (default: "sandboxes" beside SessionDir).
	// SnapshotDir holds the snapshots (default: "snapshots" beside
	// SessionDir). None may be in Workspace, nor Workspace in them.
	SessionDir, EmptyDir, SnapshotDir string
	// Max bounds the sandboxes (default DefaultMax), MaxSnapshots the
	// snapshots (default DefaultMaxSnapshots).
	Max, MaxSnapshots int
	// IdleTTL deletes a sandbox that ran no call for this long (0: never).
	IdleTTL time.Duration
	// Protect are the entries Apply never writes (the policy's
	// filesystem.protect, host.ProtectEntries).
	Protect []string
	// Disk bounds each sandbox's writable layer, in bytes (0: no
	// bound); a create may ask for less (see host.DiskLimit).
	Disk int64
	// Warm is how many sandboxes of each kind (apitype.FromWorkspace,
	// apitype.FromEmpty) are kept started ahead. So a create takes one at
	// once, and the pool refills in the background. Warm ones do not count
	// towards Max.
	Warm int
	// Wrap, if set, decorates the backend of sandbox name, created at
	// created. It is called once the sandbox has its name; for a warm one,
	// when it is taken.
	Wrap func(b rpc.Backend, name string, created time.Time) rpc.Backend
	// Decided, if set, is told each decision of a sandbox's network
	// proxy, with the sandbox's name ("" while it is warm).
	Decided func(sandbox string, d proxy.Decision)
	// Deleted, if set, is called with the name of each sandbox the
	// manager deletes by itself (idle).
	Deleted func(name string)
	// Log receives diagnostics.
	Log hclog.Logger
}

// DefaultMax is the default bound on the sandboxes of a server.
const DefaultMax = 64

// stopGrace is how long a deleted sandbox's boxsh-init may take to exit.
const stopGrace = 2 * time.Second

// Manager owns the sandboxes of a server, by name: it is the
// rpc.SandboxHost of the server's rpc.SandboxRouter.
type Manager struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc

	// snaps is held to read a snapshot (a sandbox starting from it) and
	// taken to delete one.
	snaps sync.RWMutex
	// making are the names of the snapshots being made, under snaps.
	making map[string]bool

	mu     sync.Mutex
	sbs    map[string]*Sandbox
	closed bool
	reaped chan struct{}
	// warm are the pre-started sandboxes by kind; filling is set while
	// the filler runs (fills waits for it).
	warm    map[string][]*Sandbox
	filling bool
	fills   sync.WaitGroup
	// warmed is set once the pool was first full (see Ready); fillErr is
	// why its filler stopped short, if it did.
	warmed  bool
	fillErr error
}

var _ rpc.SandboxHost = (*Manager)(nil)

// Sandbox is one sandbox of a Manager: an rpc.Backend.
type Sandbox struct {
	name, from string
	// base is where its files came from at first (apitype.FromWorkspace or
	// apitype.FromEmpty); layer the snapshot's layer it starts from, if any.
	base, layer string
	created     time.Time
	ephemeral   bool

	// op serialises snapshots and restores of the sandbox. swap is held to
	// read while a call is handed to the backend, and taken while a
	// restore replaces it.
	op   sync.Mutex
	swap sync.RWMutex

	sup     *runtime.Supervisor
	net     *host.Network // its network lists (nil: none), kept by a restore
	backend rpc.Backend
	binds   []policy.Bind // its own
	sess    *session.Session
	lock    *os.File // the session's, while it runs
	empty   string   // the empty directory of apitype.FromEmpty
	cancel  context.CancelFunc
	// diskMax is its disk limit (0: none), disk its accounting.
	diskMax int64
	disk    *host.DiskLimit

	// answered is closed when its first call ends (see refillAfter).
	answered     chan struct{}
	answeredOnce sync.Once

	mu      sync.Mutex
	running int
	calls   int64
	last    time.Time
	ready   bool
}

// validName tells whether name is 1 to 63 letters, digits, '-' or '_',
// starting with a letter or digit. It is no regexp: one would be compiled
// at every start of boxsh, as its package is initialized.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '-' && c != '_') {
			return false
		}
	}
	return true
}

// checkName refuses a sandbox's or snapshot's (what) name that is not 1
// to 63 letters, digits, '-' or '_', starting with a letter or digit.
func checkName(what, name string) error {
	if !validName(name) {
		return &rpc.SandboxError{Status: http.StatusBadRequest, Msg: fmt.Sprintf("%s name %q: expected 1 to 63 letters, digits, '-' or '_', starting with a letter or digit", what, name)}
	}
	return nil
}

// defaultDirs sets the directories c leaves unset to their defaults.
func (c *Config) defaultDirs() error {
	if c.SessionDir == "" {
		d, err := session.DefaultBaseDir()
		if err != nil {
			return err
		}
		c.SessionDir = d
	}
	if c.EmptyDir == "" {
		c.EmptyDir = filepath.Join(filepath.Dir(c.SessionDir), "sandboxes")
	}
	if c.SnapshotDir == "" {
		c.SnapshotDir = filepath.Join(filepath.Dir(c.SessionDir), "snapshots")
	}
	return nil
}

// WritableDirs returns the directories that hold the writable layers of the
// sandboxes of a Manager of c.
//
// They are its SessionDir and EmptyDir, or their defaults when unset. A file
// the server keeps from its sandboxes, such as its audit log, must be in
// neither.
func (c Config) WritableDirs() ([]string, error) {
	if err := c.defaultDirs(); err != nil {
		return nil, err
	}
	return []string{c.SessionDir, c.EmptyDir}, nil
}

// MaxRunning returns the most sandboxes a Manager runs at once, with at most
// max sandboxes (Config.Max) and warm warm ones of each kind (Config.Warm).
// Warm ones do not count towards max.
func MaxRunning(max, warm int) int { return max + len(warmKinds)*warm }

// New returns a manager whose sandboxes live until ctx ends or Close.
func New(ctx context.Context, cfg Config) (*Manager, error) {
	if !cfg.Runtime.Sandbox.Enabled {
		return nil, errors.New("sandboxes: the runtime configuration must enable the sandbox")
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	if err := cfg.defaultDirs(); err != nil {
		return nil, err
	}
	if cfg.MaxSnapshots <= 0 {
		cfg.MaxSnapshots = DefaultMaxSnapshots
	}
	for _, d := range []string{cfg.SessionDir, cfg.EmptyDir, cfg.SnapshotDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("sandboxes: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &Manager{cfg: cfg, ctx: ctx, cancel: cancel, sbs: make(map[string]*Sandbox), reaped: make(chan struct{}), warm: make(map[string][]*Sandbox), making: make(map[string]bool)}
	m.adopt(ctx)
	go m.reapIdle()
	m.refill()
	return m, nil
}

// Create starts sandbox req.Name and returns it once its boxsh-init runs
// (rpc.SandboxHost). A refusal is an *rpc.SandboxError naming the limit or
// the fault.
func (m *Manager) Create(ctx context.Context, req rpc.SandboxRequest) (rpc.Backend, apitype.SandboxInfo, error) {
	sb, err := m.create(ctx, req)
	if err != nil {
		return nil, apitype.SandboxInfo{}, err
	}
	return sb, sb.Info(), nil
}

func (m *Manager) create(ctx context.Context, req rpc.SandboxRequest) (*Sandbox, error) {
	return m.createFrom(ctx, req, "", "")
}

// createFrom is create; a sandbox from a snapshot (req.From, or a fork's
// unnamed one when layer is set) starts from its layer, its files first
// from base.
func (m *Manager) createFrom(ctx context.Context, req rpc.SandboxRequest, base, layer string) (*Sandbox, error) {
	if err := checkName("sandbox", req.Name); err != nil {
		return nil, err
	}
	switch {
	case layer != "": // a fork's
	case req.From == "":
		req.From = apitype.FromWorkspace
	case req.From == apitype.FromWorkspace, req.From == apitype.FromEmpty:
	default:
		snap, ok := strings.CutPrefix(req.From, apitype.FromSnapshotPrefix)
		if !ok {
			return nil, &rpc.SandboxError{Status: http.StatusBadRequest, Msg: fmt.Sprintf("sandbox %s: from %q: expected %q, %q or %q followed by a snapshot's name", req.Name, req.From, apitype.FromWorkspace, apitype.FromEmpty, apitype.FromSnapshotPrefix)}
		}
		info, err := m.snapshotInfo(snap)
		if err != nil {
			return nil, err
		}
		base, layer = info.Base, m.layerOf(snap)
	}
	if base == "" {
		base = req.From
	}
	diskMax, err := m.diskLimit(req.SandboxRequest)
	if err != nil {
		return nil, err
	}
	var sb *Sandbox
	if layer == "" && diskMax == m.cfg.Disk { // a warm one has the server's limit
		sb = m.takeWarm(req.From)
	}
	warm := sb != nil
	if !warm {
		sb = &Sandbox{from: req.From, base: base, layer: layer, diskMax: diskMax}
	}
	now := time.Now()
	sb.mu.Lock()
	sb.name, sb.created, sb.last, sb.ephemeral = req.Name, now, now, req.Ephemeral
	sb.mu.Unlock()
	how := admitNew
	if warm {
		how = admitWarm
	}
	if err := m.admit(ctx, sb, how); err != nil {
		return nil, err
	}
	return sb, nil
}

// How admit is to serve a sandbox.
const (
	admitNew     = iota // a sandbox to start on a new session
	admitWarm           // one of the warm pool, started
	admitAdopted        // one of an earlier server, on its session
)

// admit serves sb under its name.
//
// It is the one way a sandbox comes to be served: new, taken from the warm
// pool (how admitWarm), or adopted from an earlier server (admitAdopted).
// admit:
//
//   - reserves the name within the limits;
//   - starts the sandbox unless it runs;
//   - decorates its backend (Config.Wrap: the audit log, the memory trimmer);
//   - labels its session with its name;
//   - writes its record, last: a sandbox without its record is one whose
//     making did not end (see adopt).
//
// A new sandbox that fails loses its files; an adopted one keeps them.
func (m *Manager) admit(ctx context.Context, sb *Sandbox, how int) error {
	name := sb.Name()
	m.mu.Lock()
	var refused *rpc.SandboxError
	switch {
	case m.closed:
		refused = &rpc.SandboxError{Status: http.StatusServiceUnavailable, Msg: "the server is stopping"}
	case m.sbs[name] != nil:
		refused = &rpc.SandboxError{Status: http.StatusConflict, Msg: fmt.Sprintf("sandbox %s exists", name)}
	case len(m.sbs) >= m.cfg.Max:
		refused = &rpc.SandboxError{Status: http.StatusTooManyRequests, Msg: fmt.Sprintf("limit reached: the server hosts %d sandboxes, its maximum (--max-sandboxes %d)", m.cfg.Max, m.cfg.Max)}
	}
	if refused != nil {
		back := how == admitWarm && !m.closed
		if back {
			m.warm[sb.from] = append(m.warm[sb.from], sb)
		}
		m.mu.Unlock()
		if how == admitWarm && !back {
			sb.stop(true)
		}
		return refused
	}
	m.sbs[name] = sb // reserved: Lookup skips it until ready
	m.mu.Unlock()
	err := m.serve(ctx, sb, how)
	if err != nil {
		m.mu.Lock()
		delete(m.sbs, name)
		m.mu.Unlock()
		sb.stop(how != admitAdopted) // an adopted one's files stay, for boxsh sessions
		return fmt.Errorf("sandbox %s: %w", name, err)
	}
	sb.mu.Lock()
	sb.ready = true
	sb.mu.Unlock()
	switch how {
	case admitWarm:
		m.refillAfter(sb)
		m.cfg.Log.Info("sandbox created from the warm pool", "name", name, "from", sb.from, "took", time.Since(sb.created))
	case admitAdopted:
		m.cfg.Log.Info("sandbox hosted again", "name", name, "from", sb.from)
	default:
		m.cfg.Log.Info("sandbox created", "name", name, "from", sb.from, "took", time.Since(sb.created))
	}
	return nil
}

// serve starts sandbox sb, reserved under its name, unless it runs
// (admitWarm), and makes it its name's: its backend decorated, its
// session labelled, its record written.
func (m *Manager) serve(ctx context.Context, sb *Sandbox, how int) error {
	if how != admitWarm {
		if err := sb.start(ctx, m); err != nil {
			return err
		}
	}
	if how == admitAdopted {
		if err := sb.sess.Adopt(); err != nil {
			m.cfg.Log.Warn("the session's owner is not updated", "name", sb.name, "error", err)
		}
	}
	sb.wrap(m)
	if label := sessionLabel(sb.name); sb.sess.Info().Label != label {
		if err := sb.sess.SetLabel(label); err != nil {
			return fmt.Errorf("label its session: %w", err)
		}
	}
	return sb.record()
}

// sessionLabel is the label of the session of sandbox name ("" for a
// warm one).
func sessionLabel(name string) string {
	if name == "" {
		name = "warm"
	}
	return labelPrefix + name
}

// labelPrefix starts the label of every sandbox's session.
const labelPrefix = "sandbox "

// start makes the sandbox's workspace and starts its boxsh-init.
func (sb *Sandbox) start(ctx context.Context, m *Manager) error {
	name := sb.name
	if name == "" {
		name = "warm"
	}
	if sb.base == "" {
		sb.base = sb.from
	}
	if sb.sess == nil { // else adopted (see adopt)
		src := m.cfg.Workspace
		if sb.base == apitype.FromEmpty {
			dir, err := os.MkdirTemp(m.cfg.EmptyDir, name+"-")
			if err != nil {
				return err
			}
			sb.empty = dir
			src = dir
		}
		if sb.layer != "" {
			m.snaps.RLock()
			defer m.snaps.RUnlock()
			if _, err := os.Stat(sb.layer); err != nil {
				return &rpc.SandboxError{Status: http.StatusNotFound, Msg: "the snapshot is gone: " + err.Error()}
			}
		}
		s, err := session.New(ctx, session.Options{Src: src, BaseDir: m.cfg.SessionDir, Label: sessionLabel(sb.name), Layer: sb.layer})
		if err != nil {
			return err
		}
		sb.sess = s
	}
	s := sb.sess
	var err error
	if sb.lock, err = s.Lock(); err != nil {
		return err
	}
	if err := sb.startDisk(m); err != nil {
		return err
	}
	sb.binds = []policy.Bind{{Mode: policy.CopyOnWrite, Src: s.Src(), Dst: s.Dst()}}
	return sb.launch(m)
}

// launch starts the sandbox's boxsh-init on its session.
func (sb *Sandbox) launch(m *Manager) error {
	cfg := m.cfg.Runtime
	if sb.disk != nil {
		cfg.Sandboxed, cfg.Stale, cfg.FileSize = sb.disk.Started, sb.disk.Stale, sb.disk.FileSize
	}
	cfg.Sandbox.Binds = append(slices.Clip(cfg.Sandbox.Binds), sb.binds...)
	cfg.Cwd = sb.sess.Src()
	// A sandbox of the workspace sees it at its own path (a Seatbelt
	// sandbox works in the session's copy: it has no mounts).
	cfg.Sandbox.InPlace = goruntime.GOOS == "linux" && sb.sess.Src() == m.cfg.Workspace
	if cfg.Log != nil {
		name := sb.name
		if name == "" {
			name = "warm"
		}
		cfg.Log = cfg.Log.With("sandbox", name)
	}
	if m.cfg.Decided != nil {
		cfg.Proxy.Decided = func(d proxy.Decision) { m.cfg.Decided(sb.Name(), d) }
	}
	// Its boxsh-init lives with the manager, not with the request that
	// made it.
	sctx, cancel := context.WithCancel(m.ctx)
	sb.cancel = cancel
	cfg.Proxy.Network = sb.net
	var err error
	if sb.sup, err = runtime.NewSupervisor(sctx, cfg); err != nil {
		return err
	}
	sb.net = sb.sup.Network()
	sb.backend = sb.sup
	return nil
}

// wrap decorates the backend of the sandbox, named now, with Config.Wrap.
func (sb *Sandbox) wrap(m *Manager) {
	if m.cfg.Wrap != nil {
		sb.backend = m.cfg.Wrap(sb.sup, sb.Name(), sb.created)
	}
}

// stop stops the sandbox's boxsh-init and removes what it made: its
// overlay's work directory, and with discard its session and empty
// directory. It waits for a snapshot or restore of the sandbox to end.
func (sb *Sandbox) stop(discard bool) {
	sb.op.Lock()
	defer sb.op.Unlock()
	sb.release(discard)
}

// release is stop with sb.op held.
func (sb *Sandbox) release(discard bool) {
	sb.halt()
	sb.disk.Close()
	if sb.lock != nil {
		sb.lock.Close()
	}
	if discard && sb.sess != nil {
		forgetRecord(sb.sess)
		_ = sb.sess.Discard()
	}
	if discard && sb.empty != "" {
		_ = os.RemoveAll(sb.empty)
	}
}

// halt stops the sandbox's boxsh-init and removes its overlay's work
// directory.
func (sb *Sandbox) halt() {
	if sb.sup != nil {
		_ = sb.sup.Close(stopGrace)
	}
	if sb.cancel != nil {
		sb.cancel()
	}
	host.RemoveCowWorkDirs(sb.binds)
}

// Lookup returns a running sandbox (rpc.SandboxHost).
func (m *Manager) Lookup(name string) (rpc.Backend, bool) {
	sb := m.Get(name)
	if sb == nil {
		return nil, false
	}
	return sb, true
}

// Get returns a running sandbox, or nil.
func (m *Manager) Get(name string) *Sandbox {
	m.mu.Lock()
	sb := m.sbs[name]
	m.mu.Unlock()
	if sb == nil {
		return nil
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if !sb.ready {
		return nil
	}
	return sb
}

// Delete stops sandbox name and removes its files (rpc.SandboxHost).
func (m *Manager) Delete(name string) error {
	m.mu.Lock()
	sb := m.sbs[name]
	if sb != nil {
		sb.mu.Lock()
		ready := sb.ready
		sb.mu.Unlock()
		if !ready {
			m.mu.Unlock()
			return &rpc.SandboxError{Status: http.StatusConflict, Msg: fmt.Sprintf("sandbox %s is starting", name)}
		}
		delete(m.sbs, name)
	}
	m.mu.Unlock()
	if sb == nil {
		return &rpc.SandboxError{Status: http.StatusNotFound, Msg: "no sandbox " + name}
	}
	sb.stop(true)
	m.cfg.Log.Info("sandbox deleted", "name", name)
	return nil
}

// List describes the running sandboxes (rpc.SandboxHost).
func (m *Manager) List() []apitype.SandboxInfo {
	m.mu.Lock()
	all := make([]*Sandbox, 0, len(m.sbs))
	for _, sb := range m.sbs {
		all = append(all, sb)
	}
	m.mu.Unlock()
	out := make([]apitype.SandboxInfo, 0, len(all))
	for _, sb := range all {
		if info := sb.Info(); !info.Created.IsZero() {
			out = append(out, info)
		}
	}
	return out
}

// Ready tells whether the manager is ready for its first creates: nil once
// the warm pool was full once (at once without a pool), or why not.
//
// The sandboxes of an earlier server are hosted again by New, before. When
// the pool's filler stopped on a failure, Ready says so and starts it again.
func (m *Manager) Ready() error {
	if m.cfg.Warm <= 0 {
		return nil
	}
	m.mu.Lock()
	if m.warmed {
		m.mu.Unlock()
		return nil
	}
	n, want := 0, len(warmKinds)*m.cfg.Warm
	for _, l := range m.warm {
		n += len(l)
	}
	err := fmt.Errorf("filling the warm pool: %d of %d sandboxes started", n, want)
	if m.fillErr != nil {
		err = fmt.Errorf("%w; the last start failed: %w", err, m.fillErr)
	}
	again := !m.filling
	m.mu.Unlock()
	if again {
		m.refill()
	}
	return err
}

// Warm is the number of pre-started sandboxes ready to be taken.
func (m *Manager) Warm() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, l := range m.warm {
		n += len(l)
	}
	return n
}

// Len is the number of sandboxes, those starting included.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sbs)
}

// Close stops every sandbox.
//
// The files of those made by Create stay, as sessions that `boxsh sessions`
// lists. An ephemeral sandbox's files go.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := make([]*Sandbox, 0, len(m.sbs))
	for name, sb := range m.sbs {
		all = append(all, sb)
		delete(m.sbs, name)
	}
	for kind, list := range m.warm {
		for _, sb := range list {
			sb.ephemeral = true
			all = append(all, sb)
		}
		delete(m.warm, kind)
	}
	m.mu.Unlock()
	m.cancel()
	<-m.reaped
	m.fills.Wait()
	var wg sync.WaitGroup
	for _, sb := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb.stop(sb.ephemeral)
		}()
	}
	wg.Wait()
}

// reapIdle deletes the sandboxes idle for longer than IdleTTL.
func (m *Manager) reapIdle() {
	defer close(m.reaped)
	if m.cfg.IdleTTL <= 0 {
		<-m.ctx.Done()
		return
	}
	tick := min(max(m.cfg.IdleTTL/4, 10*time.Millisecond), 30*time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		var idle []string
		m.mu.Lock()
		for name, sb := range m.sbs {
			if sb.idleFor() > m.cfg.IdleTTL {
				idle = append(idle, name)
			}
		}
		m.mu.Unlock()
		for _, name := range idle {
			if sb := m.Get(name); sb == nil || sb.idleFor() <= m.cfg.IdleTTL {
				continue
			}
			if err := m.Delete(name); err == nil {
				m.cfg.Log.Info("idle sandbox deleted", "name", name, "ttl", m.cfg.IdleTTL)
				if m.cfg.Deleted != nil {
					m.cfg.Deleted(name)
				}
			}
		}
	}
}

// idleFor is how long the sandbox has run no call (0 while one runs or
// it starts).
func (sb *Sandbox) idleFor() time.Duration {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if !sb.ready || sb.running > 0 {
		return 0
	}
	return time.Since(sb.last)
}

// Name is the sandbox's name.
func (sb *Sandbox) Name() string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.name
}

// Info describes the sandbox (zero while it starts).
func (sb *Sandbox) Info() apitype.SandboxInfo {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if !sb.ready {
		return apitype.SandboxInfo{}
	}
	now := time.Now()
	idle := now.Sub(sb.last)
	if sb.running > 0 {
		idle = 0
	}
	return apitype.SandboxInfo{
		Name: sb.name, From: sb.from, Created: sb.created.UTC(),
		AgeSeconds: now.Sub(sb.created).Seconds(), IdleSeconds: idle.Seconds(),
		Calls: sb.calls, Running: sb.running, Workspace: sb.sess.Dst(),
		Disk: sb.diskInfo(),
	}
}

// Session is the sandbox's copy-on-write session.
func (sb *Sandbox) Session() *session.Session { return sb.sess }

// Start runs a tool call in the sandbox (rpc.Backend).
func (sb *Sandbox) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	sb.mu.Lock()
	sb.running++
	sb.calls++
	sb.last = time.Now()
	sb.mu.Unlock()
	end := func() {
		sb.mu.Lock()
		sb.running--
		sb.last = time.Now()
		sb.mu.Unlock()
		if sb.answered != nil {
			sb.answeredOnce.Do(func() { close(sb.answered) })
		}
	}
	sb.swap.RLock()
	err := sb.backend.Start(ctx, name, args, func(res json.RawMessage, err error) {
		end()
		done(res, sb.diskError(err))
	})
	sb.swap.RUnlock()
	if err != nil {
		end()
	}
	return sb.diskError(err)
}

// takeWarm takes a pre-started sandbox of kind from, or returns nil.
func (m *Manager) takeWarm(from string) *Sandbox {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := m.warm[from]
	if len(list) == 0 {
		return nil
	}
	sb := list[0]
	m.warm[from] = list[1:]
	return sb
}

// refillAfter refills the pool once sb, just taken from it, has answered its
// first call, or after a second.
//
// Starting a sandbox takes CPU that the first call would wait for.
func (m *Manager) refillAfter(sb *Sandbox) {
	go func() {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-sb.answered:
		case <-t.C:
		case <-m.ctx.Done():
			return
		}
		m.refill()
	}()
}

// warmKinds are the kinds of sandbox the pool keeps.
var warmKinds = []string{apitype.FromWorkspace, apitype.FromEmpty}

// refill starts the filler of the warm pool unless it runs: it starts
// sandboxes until each kind has Warm of them.
func (m *Manager) refill() {
	if m.cfg.Warm <= 0 {
		return
	}
	m.mu.Lock()
	if m.filling || m.closed {
		m.mu.Unlock()
		return
	}
	m.filling = true
	m.fills.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.fills.Done()
		for {
			kind := ""
			m.mu.Lock()
			for _, k := range warmKinds {
				if len(m.warm[k]) < m.cfg.Warm {
					kind = k
					break
				}
			}
			if kind == "" || m.closed {
				m.filling = false
				m.warmed = m.warmed || kind == ""
				m.fillErr = nil
				m.mu.Unlock()
				return
			}
			m.mu.Unlock()
			sb := &Sandbox{from: kind, created: time.Now(), answered: make(chan struct{}), diskMax: m.cfg.Disk}
			err := sb.start(m.ctx, m)
			if err == nil {
				err = sb.warmUp(m.ctx)
			}
			m.mu.Lock()
			if err != nil || m.closed {
				m.filling = false
				if err != nil {
					m.fillErr = err
				}
				m.mu.Unlock()
				sb.stop(true)
				if err != nil && m.ctx.Err() == nil {
					m.cfg.Log.Warn("warm pool: a sandbox failed to start", "error", err)
				}
				return
			}
			m.warm[kind] = append(m.warm[kind], sb)
			m.mu.Unlock()
		}
	}()
}

// warmUp runs a first call in a warm sandbox, so that its worker pool is
// up before its first client's call.
func (sb *Sandbox) warmUp(ctx context.Context) error {
	done := make(chan error, 1)
	err := sb.sup.Start(ctx, "bash", json.RawMessage(`{"command":"true"}`), func(_ json.RawMessage, err error) { done <- err })
	if err != nil {
		return err
	}
	select {
	case err = <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sessionOf is the session of running sandbox name.
func (m *Manager) sessionOf(name string) (*session.Session, error) {
	sb := m.Get(name)
	if sb == nil {
		return nil, &rpc.SandboxError{Status: http.StatusNotFound, Msg: "no sandbox " + name}
	}
	return sb.sess, nil
}

// Changes lists the changes of sandbox name to the workspace, as JSON: an
// array of session.Change (rpc.SandboxFiles).
func (m *Manager) Changes(name string) (json.RawMessage, error) {
	s, err := m.sessionOf(name)
	if err != nil {
		return nil, err
	}
	changes, err := s.Changes()
	if err != nil {
		return nil, err
	}
	if changes == nil {
		changes = []session.Change{}
	}
	return json.Marshal(changes)
}

// Diff is the unified diff of sandbox name's changes (rpc.SandboxFiles).
func (m *Manager) Diff(name, path string) (string, error) {
	s, err := m.sessionOf(name)
	if err != nil {
		return "", err
	}
	return s.Diff(path)
}

// Apply writes sandbox name's changes into the workspace, as boxsh apply does
// (rpc.SandboxFiles).
//
// It tells what it did as JSON: a session.ApplyResult.
func (m *Manager) Apply(name string, req apitype.ApplyRequest) (json.RawMessage, error) {
	s, err := m.sessionOf(name)
	if err != nil {
		return nil, err
	}
	res, err := s.Apply(session.ApplyOptions{DryRun: req.DryRun, Paths: req.Paths, Protect: m.cfg.Protect})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// Stats measures sandbox name as its sandbox_stats tool does
// (rpc.SandboxStats).
func (m *Manager) Stats(name string) (tool.StatsOutput, error) {
	sb := m.Get(name)
	if sb == nil {
		return tool.StatsOutput{}, &rpc.SandboxError{Status: http.StatusNotFound, Msg: "no sandbox " + name}
	}
	return sb.sup.Stats(), nil
}
