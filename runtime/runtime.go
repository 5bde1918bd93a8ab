// Package runtime starts boxsh-init, the process that runs every tool, and
// keeps it running for the front.
//
// A Supervisor runs boxsh-init either as a plain child process or, with
// --sandbox, inside the sandbox. Package runtime/plan builds the sandbox's
// plan (plan.Build is the one place that does), and package runtime/host
// prepares the host and starts it.
package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/largecall"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/starttrace"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/host"
	"github.com/boxsh/boxsh/runtime/plan"
)

// InitName is the file name of the boxsh-init executable.
const InitName = "boxsh-init"

// Config describes the boxsh-init to start.
type Config struct {
	// InitPath is the boxsh-init executable (see FindInit).
	InitPath string
	// LauncherPath is boxsh-launch, which starts each sandbox (see
	// host.FindLauncher; empty: found beside this program or InitPath).
	LauncherPath string
	// Workers and Shell configure the worker pool.
	Workers int
	Shell   string
	// LogLevel is passed on to boxsh-init.
	LogLevel string
	// Sandbox is the sandbox to start it in; Try must have been resolved
	// (see host.ResolveTry).
	Sandbox policy.Sandbox
	// DetachDestroy leaves the rest of a stopped sandbox's destroy to its
	// launcher once boxsh-init has exited (host.Container.DestroyExited),
	// for a front that then exits: a server of one sandbox, whose exit so
	// does not wait on it. A server of many keeps each destroy whole.
	DetachDestroy bool
	// Policy is the merged policy (limits, environment, file rules).
	Policy policy.Policy
	// Env is the environment of boxsh-init and the commands it runs
	// (nil: boxsh's own).
	Env []string
	// Cwd and Home are the caller's working and home directories on the
	// host. They place boxsh-init inside the sandbox (see SandboxCwd and
	// host.Gather).
	Cwd, Home string
	// Version is the front's build: boxsh-init's must be the same (see
	// initproto.Hello). It goes into the sandbox's spec too.
	Version string
	// Stderr receives boxsh-init's diagnostics (default os.Stderr).
	Stderr io.Writer
	// Log receives the front's diagnostics.
	Log hclog.Logger
	// Proxy observes the network proxy of an allowlist sandbox (the audit
	// log; the bytes through it).
	Proxy host.ProxyHooks
	// Sandboxed, if set, is called with the host PID of each boxsh-init
	// started in a sandbox, before any call reaches it. A disk limit uses
	// it to set the limits of the sandbox's processes. An error stops that
	// sandbox.
	Sandboxed func(pid int) error
	// MaxForwards, if above 0, bounds the ports the sandbox exposes at
	// once (--sandbox-forwards). It also bounds the connections to them
	// open at once (ForwardConns). So a sandbox of a server of many cannot
	// spend the server's descriptors.
	MaxForwards int
	// Stale, if set, is called before a call goes to the running
	// boxsh-init, with its host PID in a sandbox. If it gives a reason,
	// that boxsh-init is retired and the call goes to a new one. A disk
	// limit that is lifted uses it.
	Stale func(pid int) string
	// FileSize, if set, tells that a disk limit accounts the sandbox's
	// writable layer; Sandboxed and Stale belong to that limit. Each
	// boxsh-init then starts with RLIMIT_FSIZE FileSize() (soft and hard),
	// which every process of the sandbox inherits. The sandbox's seccomp
	// filter refuses the allocations that a file size limit does not
	// bound.
	FileSize func() uint64
	// ReadQuick, if set, lets the front serve small reads of a sandbox
	// itself, through the sandbox's root, with boxsh-init's result (see
	// Supervisor.frontRead); the program gives readhead.Quick.
	ReadQuick ReadQuickFunc
}

// FindInit locates boxsh-init: next to the running executable, then on
// PATH, then at $BOXSH_INIT.
func FindInit() (string, error) {
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			p := filepath.Join(filepath.Dir(exe), InitName)
			if isExecutable(p) {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath(InitName); err == nil {
		return filepath.Abs(p)
	}
	if p := os.Getenv("BOXSH_INIT"); p != "" {
		if isExecutable(p) {
			return filepath.Abs(p)
		}
		return "", fmt.Errorf("BOXSH_INIT=%s is not an executable file", p)
	}
	return "", errors.New("cannot find boxsh-init: install it next to boxsh, on PATH, or name it in BOXSH_INIT")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Instance is a running boxsh-init.
type Instance struct {
	// Client sends calls to it.
	Client *initproto.Client

	conn net.Conn
	// pid is boxsh-init's process id (in the front's PID namespace);
	// started when it started; cgroup its sandbox's cgroup directory, ""
	// without one (see Supervisor.Stats).
	pid     int
	started time.Time
	cgroup  string
	// fwd is the front's side of the forwarding socket (see
	// Supervisor.Expose), whose descriptor in boxsh-init setup names.
	fwd     *yamux.Session
	setup   initproto.Setup
	kill    func()
	waitErr error
	exited  chan struct{}
	// cleanup runs once boxsh-init has exited.
	cleanup func()
	// protectionLost, for a sandbox, reports a host change that undid the
	// protection of a protected path (and kills the sandbox).
	protectionLost func() string
	// root, for a sandbox, is the front's way into its file system for
	// the reads it serves (nil: none); answered is set once boxsh-init has
	// answered a call, so has executed: only then is its root taken.
	root     *frontRoot
	answered atomic.Bool
}

// Start starts boxsh-init and returns the Instance that talks to it.
//
// boxsh-init gets one end of a socket pair as its channel socket
// (initproto.ChannelFD). The Client's first frame is the front's hello: build
// cfg.Version, with the initproto.Setup of the descriptors that boxsh-init's
// command line does not name. boxsh-init's hello must name the same build, or
// the Client ends with a *initproto.MismatchError naming both builds (see
// Supervisor.Failed).
func Start(ctx context.Context, cfg Config) (*Instance, error) {
	var in *Instance
	var err error
	if cfg.Sandbox.Enabled {
		in, err = startSandboxed(ctx, cfg)
	} else {
		in, err = startProcess(cfg)
	}
	if err != nil {
		return nil, err
	}
	in.Client = initproto.NewClient(proc.NoWaitConn(in.conn), initproto.ClientConfig{Hello: initproto.NewHello(cfg.Version), Setup: in.setup, InitName: "boxsh-init at " + cfg.InitPath, Log: cfg.Log,
		WriteCall: largecall.WriteCall})
	return in, nil
}

// initOptions are boxsh-init's options for cfg, the policy's among them
// (see plan.ServeOptions).
func initOptions(cfg Config) initproto.InitOptions {
	o := initproto.InitOptions{Workers: cfg.Workers, Shell: cfg.Shell, LogLevel: cfg.LogLevel}
	return plan.ServeOptions(o, cfg.Policy, cfg.Sandbox.Enabled)
}

// startProcess starts boxsh-init as a plain child process.
func startProcess(cfg Config) (*Instance, error) {
	front, back, err := host.SocketPair()
	if err != nil {
		return nil, err
	}
	defer back.Close()
	fwdFront, fwdBack, err := host.SocketPair()
	if err != nil {
		front.Close()
		return nil, err
	}
	defer fwdBack.Close()
	o := initOptions(cfg)
	o.ForwardFD = initproto.ChannelFD + 1
	cmd := exec.Command(cfg.InitPath, o.Args()...)
	cmd.ExtraFiles = []*os.File{back, fwdBack}
	cmd.Env = starttrace.Env(cfg.Env)
	cmd.Stdin = nil
	cmd.Stdout = nil
	cmd.Stderr = cfg.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	starttrace.Mark("front.plain")
	if err := cmd.Start(); err != nil {
		front.Close()
		fwdFront.Close()
		return nil, fmt.Errorf("start %s: %w", cfg.InitPath, err)
	}
	var root *frontRoot
	if cfg.ReadQuick != nil {
		// Before newInstance, whose goroutine reaps it: the PID is the
		// front's unreaped child's.
		root = newPlainFrontRoot(cmd.Process.Pid)
	}
	in, err := newInstance(front, fwdFront, func() { _ = cmd.Process.Kill() }, cmd.Wait, nil)
	if in != nil {
		in.pid, in.setup, in.root = cmd.Process.Pid, o.Setup(), root
	} else if root != nil {
		root.close()
	}
	return in, err
}

// newInstance makes the Instance of a started boxsh-init.
//
// conn is its channel socket and fwd its forwarding socket (nil: none). kill
// kills it and wait waits for it; cleanup runs after it has exited.
func newInstance(conn, fwd *os.File, kill func(), wait func() error, cleanup func()) (*Instance, error) {
	c, err := net.FileConn(conn)
	conn.Close()
	var session *yamux.Session
	switch {
	case err == nil && fwd != nil:
		if session, err = forwardSession(fwd); err != nil {
			c.Close()
		}
	case fwd != nil:
		fwd.Close()
	}
	if err != nil {
		kill()
		_ = wait()
		if cleanup != nil {
			cleanup()
		}
		return nil, fmt.Errorf("frame socket: %w", err)
	}
	in := &Instance{conn: c, fwd: session, kill: kill, exited: make(chan struct{}), cleanup: cleanup, started: time.Now()}
	go func() {
		in.waitErr = wait()
		close(in.exited)
	}()
	return in, nil
}

// Stop ends boxsh-init, and kills it if it has not exited after grace.
//
// It closes the channel socket, after which boxsh-init kills what still runs
// and exits.
func (in *Instance) Stop(grace time.Duration) error {
	_ = in.conn.Close()
	if in.fwd != nil {
		_ = in.fwd.Close()
	}
	select {
	case <-in.exited:
	case <-time.After(grace):
		in.kill()
		<-in.exited
	}
	if in.root != nil {
		in.root.close()
	}
	if in.cleanup != nil {
		in.cleanup()
	}
	if in.waitErr != nil {
		return fmt.Errorf("boxsh-init: %w", in.waitErr)
	}
	return nil
}

// Supervisor keeps a boxsh-init running for the front and forwards calls to
// it.
//
// When boxsh-init dies:
//
//   - what it left is cleaned up at once: its sandbox, or in plain mode the
//     commands it ran, orphaned to the front;
//   - the calls it was running fail;
//   - a call that could not reach it is sent to a fresh one;
//   - the next call starts a fresh one.
type Supervisor struct {
	cfg Config

	mu      sync.Mutex
	current *Instance
	// fatal is why no boxsh-init can be started any more (a restart that
	// could not enforce the file rules); failed is closed then.
	fatal  error
	failed chan struct{}
	closed bool // by Close: no boxsh-init starts any more

	// ports are the exposed ports (see Expose).
	ports Ports
	// refusals are the network refusals the results report.
	refusals *refusals
	// uses count the requests secrets went into.
	uses *secretUses
	// frontReads counts the reads the front served (see frontRead).
	frontReads atomic.Uint64
}

// NewSupervisor starts the first boxsh-init and returns its Supervisor.
//
// It makes the front the child subreaper of the processes it starts, so that
// it can kill the commands of a boxsh-init that died.
func NewSupervisor(ctx context.Context, cfg Config) (*Supervisor, error) {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Proxy.Traffic == nil {
		cfg.Proxy.Traffic = new(host.Traffic) // for Stats
	}
	if err := withNetwork(&cfg); err != nil {
		return nil, err
	}
	refusals, uses := newRefusals(), &secretUses{}
	cfg.Proxy.Decided = uses.decided(refusals.decided(cfg.Proxy.Decided))
	startReaper(cfg)
	adoptOrphans(cfg.Log)
	in, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Supervisor{cfg: cfg, current: in, failed: make(chan struct{}), refusals: refusals, uses: uses}
	s.ports = Ports{dial: s.dialExposed, log: cfg.Log}
	s.ports.bound(cfg.MaxForwards)
	go s.watch(in)
	return s, nil
}

// Failed is closed when the supervisor cannot start boxsh-init any more. Err
// says why:
//
//   - a restart found that the sandbox's file rules can no longer be enforced
//     (see host.ErrFileRules), and the session must not go on without them;
//   - boxsh-init is of another build than the front: a
//     *initproto.MismatchError, found in the first frame it sends.
func (s *Supervisor) Failed() <-chan struct{} { return s.failed }

// Err is why the supervisor failed, or nil.
func (s *Supervisor) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

// watch cleans up after boxsh-init in as soon as it exits, if it is still the
// current one.
//
// The commands it ran are killed at once, not when the next call comes; in
// plain mode they are orphaned to the front, their subreaper. A boxsh-init of
// another build ends the session at once.
func (s *Supervisor) watch(in *Instance) {
	select {
	case <-in.exited:
		// Its channel ends too, once what it sent is read: the hello of a
		// boxsh-init of another build, which exits at once, is read
		// before the end is taken for a death. (The wait is bounded: a
		// descendant could hold the socket open.)
		select {
		case <-in.Client.Done():
		case <-time.After(time.Second):
		}
	case <-in.Client.Done():
		if s.refused(in) {
			return
		}
		<-in.exited
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == in && !s.refusedLocked(in) {
		s.retire("boxsh-init exited; the next call starts a new one")
	}
}

// refused reports whether in is a boxsh-init of another build: its channel
// ended with a *initproto.MismatchError.
//
// If so, refused stops it and fails the supervisor, since a restart would
// start the same one.
func (s *Supervisor) refused(in *Instance) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusedLocked(in)
}

// refusedLocked is refused with s.mu held.
func (s *Supervisor) refusedLocked(in *Instance) bool {
	var mismatch *initproto.MismatchError
	if !errors.As(in.Client.Err(), &mismatch) {
		return false
	}
	if s.current == in {
		_ = in.Stop(time.Second)
		s.current = nil
		s.killOrphans()
	}
	s.fail(mismatch)
	return true
}

// fail makes err why no boxsh-init starts any more. s.mu is held.
func (s *Supervisor) fail(err error) {
	if s.fatal == nil {
		s.fatal = err
		close(s.failed)
	}
}

// retire stops the current boxsh-init and kills what it left. s.mu is held.
func (s *Supervisor) retire(why string, args ...any) {
	s.cfg.Log.Warn(why, args...)
	_ = s.current.Stop(time.Second)
	s.current = nil
	s.killOrphans()
}

// instance returns the running boxsh-init, starting a new one if it died.
func (s *Supervisor) instance(ctx context.Context) (*Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("boxsh is stopping")
	}
	if s.fatal != nil {
		return nil, s.fatal
	}
	if s.current != nil {
		lost := ""
		if s.current.protectionLost != nil {
			lost = s.current.protectionLost()
		}
		select {
		case <-s.current.Client.Done():
			if s.refusedLocked(s.current) {
				return nil, s.fatal
			}
			s.retire("boxsh-init exited; starting a new one")
		default:
			stale := ""
			if lost == "" && s.cfg.Stale != nil {
				stale = s.cfg.Stale(s.current.pid)
			}
			switch {
			case lost != "":
				s.retire("starting a new sandbox, which protects the changed path again", "path", lost)
			case stale != "":
				s.retire(stale)
			default:
				return s.current, nil
			}
		}
	}
	in, err := Start(ctx, s.cfg)
	if err != nil {
		err = fmt.Errorf("restart boxsh-init: %w", err)
		if errors.Is(err, host.ErrFileRules) {
			s.fail(err)
		}
		return nil, err
	}
	s.current = in
	go s.watch(in)
	return in, nil
}

// maxResends bounds how many times one call is sent again to a new
// boxsh-init because the one it was sent to died before starting it.
const maxResends = 3

// Start forwards a tool call (rpc.Backend).
//
// The result of bash, process_output and the terminal tools gets the
// network refusals made meanwhile (see refusals). When boxsh-init dies, a call it had queued but not started
// (initproto.ErrNotStarted) is sent to a new one, a bounded number of times. A
// call that cannot have reached it (initproto.ErrNotSent) is sent again once.
func (s *Supervisor) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	if s.frontTool(ctx, name, args, done) || s.frontRead(ctx, name, args, done) {
		return nil
	}
	return s.start(ctx, name, args, s.refusals.wrap(name, args, done), 0)
}

// start is Start for a call already sent resends times.
func (s *Supervisor) start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error), resends int) error {
	finish := func(res json.RawMessage, err error) {
		if errors.Is(err, initproto.ErrNotStarted) && resends < maxResends && ctx.Err() == nil {
			s.cfg.Log.Debug("sending a call that a dead boxsh-init had not started to a new one", "tool", name)
			if err := s.start(ctx, name, args, done, resends+1); err != nil {
				done(nil, lost(err))
			}
			return
		}
		done(res, lost(err))
	}
	for attempt := 0; ; attempt++ {
		in, err := s.instance(ctx)
		if err != nil {
			return err
		}
		f := finish
		if in.root != nil && !in.answered.Load() {
			f = func(res json.RawMessage, err error) {
				if err == nil {
					in.answered.Store(true)
				}
				finish(res, err)
			}
		}
		err = in.Client.Start(ctx, name, args, f)
		if err == nil || !errors.Is(err, initproto.ErrNotSent) || attempt > 0 {
			return lost(err)
		}
		s.mu.Lock()
		if s.current == in && !s.refusedLocked(in) {
			s.retire("boxsh-init is gone; sending the call to a new one", "error", err)
		}
		s.mu.Unlock()
	}
}

// lost explains the loss of boxsh-init to the client.
func lost(err error) error {
	if errors.Is(err, initproto.ErrNotStarted) {
		return fmt.Errorf("boxsh-init exited before the call started: %w", err)
	}
	if errors.Is(err, initproto.ErrClosed) {
		return fmt.Errorf("boxsh-init exited while running the call: %w", err)
	}
	return err
}

// Pause stops every process of the sandbox until resume is called.
//
// It uses the freezer of the sandbox's cgroup where it has one of its own (a
// sandbox of root, host.FreezeCgroup), and signals otherwise (host.Freeze).
// Meanwhile its commands neither run nor write, except a process that a
// SIGCONT from outside the sandbox continues (see host.Freeze). Calls sent to
// the sandbox wait, as does any start of a new boxsh-init. Without a running
// boxsh-init there is nothing to stop. A sandbox is required.
func (s *Supervisor) Pause(timeout time.Duration) (resume func(), err error) {
	if !s.cfg.Sandbox.Enabled {
		return nil, errors.New("pause: only a sandbox can be paused")
	}
	s.mu.Lock()
	if s.current == nil || s.current.pid == 0 {
		return s.mu.Unlock, nil
	}
	freeze := func() (func(), error) { return host.Freeze(s.current.pid, timeout) }
	if s.current.cgroup != "" {
		freeze = func() (func(), error) { return host.FreezeCgroup(s.current.cgroup, timeout) }
	}
	thaw, err := freeze()
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return func() {
		thaw()
		s.mu.Unlock()
	}, nil
}

// Close stops the running boxsh-init.
func (s *Supervisor) Close(grace time.Duration) error {
	s.ports.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.current == nil {
		return nil
	}
	in := s.current
	s.current = nil // for watch
	err := in.Stop(grace)
	s.killOrphans()
	return err
}

// killOrphans kills what a boxsh-init of plain mode left, reparented to the
// front. A sandbox leaves nothing: its PID namespace ends with its
// boxsh-init, and the front's other children may be the sandboxes of
// others (boxsh --sandboxes), which must live on.
func (s *Supervisor) killOrphans() {
	if s.cfg.Sandbox.Enabled {
		return
	}
	killOrphans(s.cfg.Log)
}
