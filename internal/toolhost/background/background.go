// Package background runs the commands of bash calls with background set.
//
// Each command starts in its own process group, with its output kept in a
// bounded buffer. It lives until it is killed, until it has exited and its
// output has been read to the end, or until the Manager is closed. Such
// commands take no worker of the bash pool.
package background

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/bash"
	"github.com/boxsh/boxsh/internal/toolhost/reap"
)

// ErrUnknown is returned, wrapped with the id, for an id that names no
// background process.
var ErrUnknown = errors.New("unknown background process")

// ErrTooMany is returned by Start when the Manager holds its maximum of
// processes and none of them has exited.
var ErrTooMany = errors.New("too many background processes")

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("background processes are closed")

// killWait bounds how long Kill waits for the process to exit.
const killWait = time.Second

// Options configures a Manager.
type Options struct {
	// Shell runs each command as Shell -c command (default /bin/sh).
	Shell string
	// Env is the commands' environment (nil: os.Environ()).
	Env []string
	// Max bounds the processes kept at once (default tool.MaxProcesses);
	// Buffer the output kept of each (default tool.ProcessBuffer).
	Max, Buffer int
	// Limits are applied to each command by running its shell through
	// LimitsExe (see proc.Limits.Wrap).
	Limits    proc.Limits
	LimitsExe string
	// Reaper, when boxsh-init is PID 1, starts the processes so that
	// their exit status is left to this package.
	Reaper *reap.Reaper
	Log    hclog.Logger
}

// Manager holds the background processes. Its methods are safe for
// concurrent use.
type Manager struct {
	opts Options

	mu     sync.Mutex
	procs  map[string]*process
	seq    uint64
	closed bool
}

// NewManager returns a Manager configured by opts.
func NewManager(opts Options) *Manager {
	opts.Shell = cmp.Or(opts.Shell, "/bin/sh")
	if opts.Max <= 0 {
		opts.Max = tool.MaxProcesses
	}
	if opts.Buffer <= 0 {
		opts.Buffer = tool.ProcessBuffer
	}
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	return &Manager{opts: opts, procs: make(map[string]*process)}
}

// Start starts the command of args in the background, and returns its id and
// pid at once.
//
// The command is Command, or Args without a shell. Its stdin is args.Stdin. A
// positive args.Timeout kills its process group after that time.
func (m *Manager) Start(args tool.BashArgs) (tool.BashOutput, error) {
	started := time.Now()
	script, command := args.Command, args.Command
	if args.Args != nil {
		var err error
		if script, err = bash.ArgvCommand(args.Args); err != nil {
			return tool.BashOutput{}, err
		}
		command = strings.Join(args.Args, " ")
	}
	if script == "" {
		return tool.BashOutput{}, errors.New("empty command")
	}
	if args.Cwd != "" {
		fi, err := os.Stat(args.Cwd)
		if err != nil {
			return tool.BashOutput{}, fmt.Errorf("cwd: %w", err)
		}
		if !fi.IsDir() {
			return tool.BashOutput{}, fmt.Errorf("cwd: %s is not a directory", args.Cwd)
		}
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return tool.BashOutput{}, ErrClosed
	}
	if len(m.procs) >= m.opts.Max {
		var oldest *process
		for _, p := range m.procs {
			if p.hasExited() && (oldest == nil || p.seq < oldest.seq) {
				oldest = p
			}
		}
		if oldest == nil {
			m.mu.Unlock()
			return tool.BashOutput{}, fmt.Errorf("%w: %d are running (kill one with process_kill, or read an exited one to the end with process_output)", ErrTooMany, m.opts.Max)
		}
		delete(m.procs, oldest.id)
	}
	m.seq++
	p := &process{id: uuid.NewString(), seq: m.seq, command: command, started: started,
		out: newRing(m.opts.Buffer), changed: make(chan struct{}), done: make(chan struct{})}
	// Counted against Max while it starts; removed again if it fails.
	m.procs[p.id] = p
	m.mu.Unlock()

	if err := m.start(p, script, args); err != nil {
		m.mu.Lock()
		delete(m.procs, p.id)
		m.mu.Unlock()
		return tool.BashOutput{}, err
	}
	m.opts.Log.Debug("background process started", "id", p.id, "pid", p.pid, "command", command)
	if args.Timeout > 0 {
		t := time.AfterFunc(bash.SecondsDuration(args.Timeout), func() {
			p.signal(syscall.SIGKILL)
		})
		go func() { <-p.done; t.Stop() }()
	}
	return tool.BashOutput{ID: p.id, PID: p.pid, DurationMS: time.Since(started).Milliseconds()}, nil
}

// start starts p's shell with its pipes, and the goroutines that read
// them and wait for it.
func (m *Manager) start(p *process, script string, args tool.BashArgs) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return err
	}
	argv := m.opts.Limits.Wrap(m.opts.LimitsExe, []string{m.opts.Shell, "-c", script})
	cmd := exec.Command(argv[0], argv[1:]...)
	env := m.opts.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = bash.MergeEnv(env, args.Env)
	cmd.Dir = args.Cwd
	cmd.Stdout, cmd.Stderr = outW, errW
	var inW *os.File
	if args.Stdin != "" {
		var inR *os.File
		if inR, inW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			return err
		}
		defer inR.Close()
		cmd.Stdin = inR
	}
	cmd.SysProcAttr = procAttr()
	err = m.opts.Reaper.Start(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	closeAll(outW, errW)
	if err != nil {
		closeAll(outR, errR, inW)
		return fmt.Errorf("start %s: %w", m.opts.Shell, err)
	}
	p.pid = cmd.Process.Pid
	if inW != nil {
		go func() {
			_, _ = inW.WriteString(args.Stdin)
			_ = inW.Close()
		}()
	}
	var readers sync.WaitGroup
	readers.Go(func() { p.read(outR, streamStdout) })
	readers.Go(func() { p.read(errR, streamStderr) })
	go func() {
		ws, err := waitProcess(cmd.Process)
		m.opts.Reaper.Forget(p.pid)
		if err != nil {
			m.opts.Log.Warn("wait for background process", "id", p.id, "error", err)
		}
		// What is already in the pipes is read (see drain.Reader);
		// processes the command left running that keep them open are
		// not waited for.
		deadline := time.Now().Add(50 * time.Millisecond)
		_ = outR.SetReadDeadline(deadline)
		_ = errR.SetReadDeadline(deadline)
		readers.Wait()
		closeAll(outR, errR)
		p.exit(ws, err == nil)
		m.opts.Log.Debug("background process exited", "id", p.id, "pid", p.pid)
	}()
	return nil
}

// Output returns p's output from offset on.
//
// When there is no output past offset yet, it waits up to wait for some, or
// for the exit. A process that has exited and whose output is returned to its
// end is forgotten.
func (m *Manager) Output(ctx context.Context, id string, offset int64, wait time.Duration) (tool.ProcessOutputResult, error) {
	p, err := m.lookup(id)
	if err != nil {
		return tool.ProcessOutputResult{}, err
	}
	if offset < 0 {
		return tool.ProcessOutputResult{}, fmt.Errorf("offset %d: must be at least 0", offset)
	}
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for {
			p.mu.Lock()
			ready := p.exited || p.out.end > offset
			changed := p.changed
			p.mu.Unlock()
			if ready {
				break
			}
			select {
			case <-changed:
				continue
			case <-timer.C:
			case <-ctx.Done():
				return tool.ProcessOutputResult{}, ctx.Err()
			}
			break
		}
	}
	p.mu.Lock()
	r := tool.ProcessOutputResult{ID: p.id, ProcessState: p.stateLocked()}
	r.Stdout, r.Stderr, r.NextOffset, r.Dropped = p.out.since(offset)
	forget := p.exited && r.NextOffset >= p.out.end
	p.mu.Unlock()
	if forget {
		m.mu.Lock()
		if m.procs[id] == p {
			delete(m.procs, id)
		}
		m.mu.Unlock()
	}
	return r, nil
}

// Kill sends sig to p's process group, and waits for it to exit up to a
// second, or until ctx is done.
//
// sig is a name, with or without SIG, or a number; "" means TERM.
func (m *Manager) Kill(ctx context.Context, id, sig string) (tool.ProcessInfo, error) {
	s, err := ParseSignal(sig)
	if err != nil {
		return tool.ProcessInfo{}, err
	}
	p, err := m.lookup(id)
	if err != nil {
		return tool.ProcessInfo{}, err
	}
	if err := p.signal(s); err != nil && !errors.Is(err, syscall.ESRCH) {
		return tool.ProcessInfo{}, fmt.Errorf("signal %s: %w", unix.SignalName(s), err)
	}
	if s != syscall.SIGSTOP && s != syscall.SIGCONT && s != syscall.SIGTSTP {
		t := time.NewTimer(killWait)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return p.info(), nil
}

// List describes the processes, oldest first. It never returns nil.
func (m *Manager) List() []tool.ProcessInfo {
	m.mu.Lock()
	ps := make([]*process, 0, len(m.procs))
	for _, p := range m.procs {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i].seq < ps[j].seq })
	infos := make([]tool.ProcessInfo, 0, len(ps))
	for _, p := range ps {
		infos = append(infos, p.info())
	}
	return infos
}

// Close kills every process group with SIGKILL and waits, up to wait, for
// the processes to be reaped. Start fails with ErrClosed afterwards.
func (m *Manager) Close(wait time.Duration) {
	m.mu.Lock()
	m.closed = true
	ps := make([]*process, 0, len(m.procs))
	for _, p := range m.procs {
		ps = append(ps, p)
	}
	m.procs = map[string]*process{}
	m.mu.Unlock()
	for _, p := range ps {
		_ = p.signal(syscall.SIGKILL)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for _, p := range ps {
		select {
		case <-p.done:
		case <-t.C:
			return
		}
	}
}

func (m *Manager) lookup(id string) (*process, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.procs[id]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknown, id)
}

// ParseSignal parses a signal name ("TERM", "SIGTERM", "term") or number;
// "" is SIGTERM.
func ParseSignal(s string) (syscall.Signal, error) {
	if s == "" {
		return syscall.SIGTERM, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 64 {
			return 0, fmt.Errorf("signal %d: out of range", n)
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}
