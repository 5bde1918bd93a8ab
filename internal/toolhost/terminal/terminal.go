// Package terminal runs commands in persistent pseudo-terminal sessions, for
// the MCP terminal tools.
//
// A Manager starts each command on its own pseudo-terminal. It keeps reading
// what the command writes into a terminal emulator, and reports the rendered
// screen. So a caller sees what a person at the terminal would see: text
// without escape sequences, with overwritten characters gone. Sessions live
// until they are killed. A session whose process ended on its own can still be
// queried.
package terminal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/toolhost/reap"
)

// Defaults and limits of a Manager.
const (
	// DefaultShell runs the commands when Options.Shell is empty.
	DefaultShell = "/bin/sh"
	// DefaultMaxSessions bounds the sessions when Options.MaxSessions is not
	// positive.
	DefaultMaxSessions = 64
	// DefaultCols and DefaultRows are the terminal size Run uses when it is
	// given none.
	DefaultCols = 220
	DefaultRows = 50
	// MaxCols and MaxRows bound the terminal size Run accepts.
	MaxCols = 1000
	MaxRows = 500
	// ScrollbackLines is how many lines that scrolled off the screen a
	// session keeps and reports above the screen.
	ScrollbackLines = 1000
)

// Timing of the waits.
const (
	// outputWait is how long Run and Send wait for new output.
	outputWait = 500 * time.Millisecond
	// settleQuiet is the pause in the output that ends a wait once output
	// has started to arrive, and that ends Output's wait at once.
	settleQuiet = 30 * time.Millisecond
	// streamSettle bounds how long Output waits, once new output has
	// arrived, for the output to pause: a command that prints without
	// pause is reported as it goes. A redraw of the screen arrives in a
	// burst much shorter than this.
	streamSettle = 30 * time.Millisecond
	// hangupGrace is how long Kill waits after SIGHUP before SIGKILL.
	hangupGrace = 3 * time.Second
	// drainQuiet and drainMax bound how long a session that exited waits for
	// its last output when something else still holds the terminal open.
	drainQuiet = 100 * time.Millisecond
	drainMax   = time.Second
	// writeTimeout bounds a write to a program that does not read its input.
	writeTimeout = 10 * time.Second
	// reapTimeout bounds the wait for a killed process to be reaped.
	reapTimeout = 5 * time.Second
	// closeWait bounds the wait for the reader once the terminal is closed.
	closeWait = time.Second
)

// ErrUnknownSession is returned, wrapped with the session id, for an id that
// names no session.
var ErrUnknownSession = errors.New("unknown terminal session")

// ErrExited is returned, wrapped with the session id, by Send to a session
// whose process has exited.
var ErrExited = errors.New("terminal session has exited")

// ErrTooManySessions is returned by Run when the Manager already holds its
// maximum number of sessions and none of them has exited.
var ErrTooManySessions = errors.New("too many terminal sessions")

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("terminal manager is closed")

// Snapshot is the state of a session as the tools report it.
type Snapshot struct {
	// ID is the session id; only Run sets it.
	ID string `json:"id,omitempty"`
	// Output is the rendered screen, preceded by the lines that scrolled
	// off it. Lines are joined by "\n", without trailing blanks or
	// trailing empty lines, and without control characters or escape
	// sequences.
	Output string `json:"output"`
	// Exited reports whether the process has ended.
	Exited bool `json:"exited"`
	// ExitCode is the exit status of the process, or 128 plus the signal
	// number if a signal killed it. It is nil (JSON null) while the
	// process runs.
	ExitCode *int `json:"exit_code"`
}

// Info describes a session for list_terminals.
type Info struct {
	// ID is the session id.
	ID string `json:"id"`
	// Command is the command the session runs, as given to Run.
	Command string `json:"command"`
	// Alive reports whether the process is still running.
	Alive bool `json:"alive"`
	// Cols and Rows are the size of the session's terminal.
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// Options configures a Manager.
type Options struct {
	// Shell runs each command as Shell -c command; DefaultShell if empty.
	Shell string
	// Env is the environment of the commands; os.Environ() if nil.
	// TERM=xterm-256color is always added.
	Env []string
	// Log receives the session lifecycle; nothing is logged if nil.
	Log hclog.Logger
	// MaxSessions bounds the number of sessions, exited ones included;
	// DefaultMaxSessions if not positive.
	MaxSessions int
	// Reaper, when boxsh-init is PID 1, starts the sessions' processes so
	// that it leaves their exit status to the session. It is nil when
	// boxsh-init is not PID 1.
	Reaper *reap.Reaper
	// Limits are applied to each session's shell and what it runs, by
	// running the shell through LimitsExe (see proc.Limits.Wrap).
	Limits    proc.Limits
	LimitsExe string
}

// Manager holds the terminal sessions. Its methods are safe for concurrent
// use.
type Manager struct {
	shell  string
	env    []string
	log    hclog.Logger
	max    int
	reaper *reap.Reaper
	// limits and limitsExe run each session's shell under limits.
	limits    proc.Limits
	limitsExe string

	mu       sync.Mutex
	sessions map[string]*session
	starting int    // sessions being started, counted against max
	seq      uint64 // creation order of sessions
	closed   bool
}

// NewManager returns a Manager configured by opts.
func NewManager(opts Options) *Manager {
	m := &Manager{
		shell:     cmp.Or(opts.Shell, DefaultShell),
		env:       opts.Env,
		log:       opts.Log,
		max:       opts.MaxSessions,
		reaper:    opts.Reaper,
		limits:    opts.Limits,
		limitsExe: opts.LimitsExe,
		sessions:  make(map[string]*session),
	}
	if m.log == nil {
		m.log = hclog.NewNullLogger()
	}
	if m.max <= 0 {
		m.max = DefaultMaxSessions
	}
	return m
}

// Run starts command, as Shell -c command, on a new pseudo-terminal, and
// returns the session's snapshot with its ID set.
//
// The terminal has cols columns and rows rows (DefaultCols and DefaultRows if
// not positive). Run waits for the command's first output as Output does.
//
// If the Manager is at its limit, Run first removes the oldest session whose
// process has exited; if there is none, it fails with ErrTooManySessions. If
// ctx is done before the first output, the session is killed and Run returns
// the context's error.
func (m *Manager) Run(ctx context.Context, command string, cols, rows int) (Snapshot, error) {
	if command == "" {
		return Snapshot{}, errors.New("run terminal: empty command")
	}
	if cols <= 0 {
		cols = DefaultCols
	}
	if rows <= 0 {
		rows = DefaultRows
	}
	if cols > MaxCols || rows > MaxRows {
		return Snapshot{}, fmt.Errorf("run terminal: size %dx%d exceeds %dx%d", cols, rows, MaxCols, MaxRows)
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, fmt.Errorf("run terminal: %w", err)
	}

	evicted, err := m.reserve()
	if err != nil {
		return Snapshot{}, fmt.Errorf("run terminal: %w", err)
	}
	if evicted != nil {
		m.log.Debug("evicting exited terminal session", "id", evicted.id)
		evicted.terminate(ctx, syscall.SIGKILL, 0)
	}

	s, err := m.start(command, cols, rows)

	m.mu.Lock()
	m.starting--
	if err == nil {
		if m.closed {
			err = ErrClosed
		} else {
			m.seq++
			s.seq = m.seq
			m.sessions[s.id] = s
		}
	}
	m.mu.Unlock()
	if err != nil {
		if s != nil {
			s.terminate(ctx, syscall.SIGKILL, 0)
		}
		return Snapshot{}, fmt.Errorf("run terminal: %w", err)
	}
	m.log.Debug("terminal session started", "id", s.id, "pid", s.pid, "command", command, "cols", cols, "rows", rows)

	if err := s.waitOutput(ctx); err != nil {
		m.remove(s.id)
		s.terminate(context.Background(), syscall.SIGKILL, 0)
		return Snapshot{}, fmt.Errorf("run terminal: %w", err)
	}
	snap := s.snapshot()
	snap.ID = s.id
	return snap, nil
}

// reserve counts a session about to start against the limit, removing the
// oldest exited session if the limit is reached. The caller cleans up the
// removed session, if any.
func (m *Manager) reserve() (evicted *session, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if len(m.sessions)+m.starting >= m.max {
		for _, s := range m.sessions {
			if s.hasExited() && (evicted == nil || s.seq < evicted.seq) {
				evicted = s
			}
		}
		if evicted == nil {
			return nil, fmt.Errorf("%w (at most %d)", ErrTooManySessions, m.max)
		}
		delete(m.sessions, evicted.id)
	}
	m.starting++
	return evicted, nil
}

// start starts command on a new pseudo-terminal and the goroutines that
// serve it.
func (m *Manager) start(command string, cols, rows int) (*session, error) {
	env := m.env
	if env == nil {
		env = os.Environ()
	}
	argv := m.limits.Wrap(m.limitsExe, []string{m.shell, "-c", command})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(slices.Clip(env), "TERM=xterm-256color")
	var f *os.File
	err := m.reaper.Start(func() (int, error) {
		var err error
		if f, err = startPTY(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", m.shell, err)
	}
	s := newSession(uuid.NewString(), command, cols, rows, cmd, pollable(f), m.log)
	s.reaper = m.reaper
	go s.readLoop()
	go s.waitLoop()
	return s, nil
}

// Send writes text to the session's terminal as typed input, then waits and
// reports as Output does.
//
// text is sent as is: end it with "\n" to run a line. Send fails with
// ErrExited if the session's process has exited.
func (m *Manager) Send(ctx context.Context, id, text string) (Snapshot, error) {
	s, err := m.lookup(id)
	if err != nil {
		return Snapshot{}, fmt.Errorf("send to terminal: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, fmt.Errorf("send to terminal %s: %w", id, err)
	}
	if s.hasExited() {
		return Snapshot{}, fmt.Errorf("send to terminal: %w: %s", ErrExited, id)
	}
	if err := s.write(ctx, text); err != nil {
		return Snapshot{}, fmt.Errorf("send to terminal %s: %w", id, err)
	}
	if err := s.waitOutput(ctx); err != nil {
		return Snapshot{}, fmt.Errorf("send to terminal %s: %w", id, err)
	}
	return s.snapshot(), nil
}

// Output returns the session's snapshot once its screen has been quiet for
// settleQuiet, counted from the call, so that a screen is not reported half
// drawn.
//
// While output streams in without pause, it returns at most streamSettle after
// the first new output. It returns at once if the process has exited.
func (m *Manager) Output(ctx context.Context, id string) (Snapshot, error) {
	s, err := m.lookup(id)
	if err != nil {
		return Snapshot{}, fmt.Errorf("terminal output: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, fmt.Errorf("terminal output %s: %w", id, err)
	}
	if err := s.waitQuiet(ctx); err != nil {
		return Snapshot{}, fmt.Errorf("terminal output %s: %w", id, err)
	}
	return s.snapshot(), nil
}

// Kill ends a session and returns its final snapshot.
//
// It sends SIGHUP to the session's process group. If the process is still
// alive after a grace period, cut short when ctx is done, it sends SIGKILL. It
// then collects the last output and removes the session.
func (m *Manager) Kill(ctx context.Context, id string) (Snapshot, error) {
	s := m.remove(id)
	if s == nil {
		return Snapshot{}, fmt.Errorf("kill terminal: %w: %s", ErrUnknownSession, id)
	}
	m.log.Debug("killing terminal session", "id", id, "pid", s.pid)
	s.terminate(ctx, syscall.SIGHUP, hangupGrace)
	return s.snapshot(), nil
}

// List describes the sessions, oldest first. It never returns nil.
func (m *Manager) List() []Info {
	m.mu.Lock()
	sessions := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		sessions = append(sessions, s)
	}
	m.mu.Unlock()
	slices.SortFunc(sessions, func(a, b *session) int { return cmp.Compare(a.seq, b.seq) })

	infos := make([]Info, 0, len(sessions))
	for _, s := range sessions {
		infos = append(infos, Info{
			ID:      s.id,
			Command: s.command,
			Alive:   !s.hasExited(),
			Cols:    s.cols,
			Rows:    s.rows,
		})
	}
	return infos
}

// Close kills every session with SIGKILL to its process group and frees
// them. Run fails with ErrClosed afterwards; the other methods find no
// sessions.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	sessions := make([]*session, 0, len(m.sessions))
	for id, s := range m.sessions {
		sessions = append(sessions, s)
		delete(m.sessions, id)
	}
	m.mu.Unlock()

	for _, s := range sessions {
		s.signal(syscall.SIGKILL)
	}
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() { s.terminate(context.Background(), syscall.SIGKILL, 0) })
	}
	wg.Wait()
	if len(sessions) > 0 {
		m.log.Debug("terminal sessions closed", "count", len(sessions))
	}
}

// lookup returns the session id names.
func (m *Manager) lookup(id string) (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownSession, id)
	}
	return s, nil
}

// remove removes and returns the session id names, or nil if there is none.
func (m *Manager) remove(id string) *session {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	delete(m.sessions, id)
	return s
}

// pid returns the process id of a session's command, or 0. Tests use it.
func (m *Manager) pid(id string) int {
	s, err := m.lookup(id)
	if err != nil {
		return 0
	}
	return s.pid
}
