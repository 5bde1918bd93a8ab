// Package bash runs the bash tool: each call runs in a fresh shell in its
// own process group, on one of a bounded number of workers. Calls beyond the
// number of workers wait in arrival order.
//
// Starting a shell by exec costs about a millisecond, more than the rest of
// a call. So on Linux, with the fork-server library (Options.ForkServer),
// the pool keeps the next call's shell already made: a "warm" shell, cloned
// from a zygote (one shell started with the library preloaded, which clones
// itself before its main runs, see zygote/zygote.c), a new process used
// once, with the pool's environment and directory and /dev/null as stdin,
// waiting for its command before the shell's main starts; then it runs as
// `<shell> -c COMMAND`. A call sees what a fresh `sh -c COMMAND </dev/null`
// would see: $0 is the shell, $$ its own PID, no variables, aliases,
// functions or directory changes of earlier calls. Calls that ask for their
// own directory, environment or stdin, and every call where there is no
// zygote, start a shell by exec instead.
//
// The zygote and the warm shells are not dumpable until a warm shell has
// its command: no command can read or write their memory (/proc/PID/mem)
// and plant code in a later call's shell. A shell started by exec cannot
// be kept that way while it waits (exec makes it dumpable, and a shell
// cannot turn that off), so no shell is started by exec ahead of its call.
package bash

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/agent/reap"
	"github.com/boxsh/boxsh/internal/proc"

	"github.com/boxsh/boxsh/tool"
)

// MaxStream is the default cap on each of stdout and stderr (10 MiB).
const MaxStream = 10 << 20

// drainGrace is how long output is still collected after the shell exits,
// for data already in flight; background processes that keep the pipes open
// do not hold the answer up beyond it.
const drainGrace = 50 * time.Millisecond

// Options configure a Pool.
type Options struct {
	// Shell is the shell binary (default /bin/sh).
	Shell string
	// Workers is the number of commands that run at once (default 4).
	Workers int
	// Env is the base environment of commands (default os.Environ()).
	Env []string
	// Dir is the default working directory ("" means the pool's own).
	Dir string
	// MaxStream caps each output stream (default MaxStream).
	MaxStream int
	// Limits are applied to every shell and what it runs, by running the
	// shell through LimitsExe (see proc.Limits.Wrap).
	Limits    proc.Limits
	LimitsExe string
	// Log receives diagnostics.
	Log hclog.Logger
	// Reaper, when boxsh-init is PID 1, starts the shells so that it
	// leaves their exit status to the pool (nil: not PID 1).
	Reaper *reap.Reaper
	// ForkServer is the fork-server library (boxsh-zygote.so, see
	// proc.FindForkServer) from which warm shells are cloned; empty, or
	// where it cannot serve (not Linux, a static shell, an environment
	// with its own LD_PRELOAD), every shell is started by exec.
	ForkServer string
}

// Pool runs bash calls on a fixed number of workers.
type Pool struct {
	opts Options
	done chan struct{} // closed by Close
	// devNull is the stdin of commands given none.
	devNull *os.File
	// zygote clones warm shells; nil while there is none.
	zygote atomic.Pointer[zygote]
	// zygoteRestart starts a new zygote after one failed (guarded by mu).
	zygoteRestart *time.Timer

	// shells holds the warm shells ready for calls: idleShells while the
	// pool is idle, not one per worker: each waiting shell holds memory.
	// Each call has another started in place of the one it took (see
	// takeShell).
	shells chan *shell
	// refills counts the goroutines starting warm shells for shells.
	refills sync.WaitGroup
	// wanted is how many warm shells were asked for (refill) and are
	// not yet being made; refilling tells that the goroutine making
	// them runs (guarded by mu).
	wanted    int
	refilling bool
	// warmedUp is closed once the fork server and the first warm shell
	// have started (or failed to).
	warmedUp chan struct{}
	// short is how many shells the first call's release starts beyond its
	// own replacement, to bring shells to idleShells: at start-up only
	// one is made, so that on a cold start the first call does not share
	// the processor with more shell start-ups.
	short atomic.Int32

	mu      sync.Mutex
	closed  bool
	free    []*worker
	queue   []*Ticket        // waiting calls, in arrival order
	running map[int]struct{} // process groups of running commands
	// lingering are process groups of finished calls that still have
	// members (background processes); Close kills them.
	lingering map[int]struct{}
	workers   sync.WaitGroup // workers not yet retired by Close
}

// Ticket is a call's place in line for a worker.
type Ticket struct {
	ch        chan *worker // receives the worker, once
	abandoned bool         // guarded by Pool.mu
	started   func()       // see OnStart; set under Pool.mu before ch receives
	granted   func()       // see OnGranted; likewise
}

// OnGranted tells whether ticket t is still in line for a worker. If it
// is, granted is called once the ticket has its worker (RunHold with it
// then does not wait), with the pool's lock held: it must not block, and
// may start the goroutine that runs the call. A call waiting in line thus
// needs no goroutine of its own.
func (p *Pool) OnGranted(t *Ticket, granted func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(t.ch) > 0 {
		return false
	}
	t.granted = granted
	return true
}

// OnStart tells whether ticket t is still in line for a worker. If it is,
// started is called when the call gets its worker, before the command
// runs (see RunHold).
func (p *Pool) OnStart(t *Ticket, started func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(t.ch) > 0 {
		return false
	}
	t.started = started
	return true
}

// zygoteFDEnv names the zygote's socket in its environment (see
// zygote/zygote.c).
const zygoteFDEnv = "BOXSH_ZYGOTE_FD"

// worker is one of the Workers places for a running call.
type worker struct{}

// errNoZygote stands for a warm shell while there is no zygote: the call
// starts a shell by exec.
var errNoZygote = errors.New("no fork server")

// errPoolClosed is the warm shell of a call the pool was closed under.
var errPoolClosed = errors.New("bash: pool closed")

// idleShells is how many warm shells wait while the pool is idle: the
// next call's, and the one after it, for a call that comes as soon as
// the previous one is answered, before that one's replacement is ready.
const idleShells = 2

// takeShell returns a warm shell for a call. Another is to be started in
// its place: when the call's answer has been delivered if one was ready
// (refillLater; off the call's path, while the client thinks), else at
// once, for this call. Calls that come together thus each wait at most
// for the start of one shell (they could not all run at once anyway: the
// shells would share the processor).
func (p *Pool) takeShell() (s *shell, refillLater bool) {
	select {
	case s := <-p.shells:
		return s, true
	default:
	}
	p.refill()
	select {
	case s := <-p.shells:
		return s, false
	case <-p.done:
		// refill started nothing: take one if one is there.
		select {
		case s := <-p.shells:
			return s, false
		default:
			return &shell{err: errPoolClosed}, false
		}
	}
}

// refill asks for a warm shell for shells, unless the pool is closed.
// One goroutine makes them, as many as were asked for by then in one
// exchange with the zygote (up to maxBatch): in a burst of calls, where
// each call asks for one, the zygote and boxsh-init then wake once for
// several shells, and no goroutine is started for each.
func (p *Pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.wanted++
	if p.refilling {
		return
	}
	p.refilling = true
	p.refills.Add(1)
	go p.refiller()
}

// maxBatch bounds the warm shells made in one exchange with the zygote:
// the first of them is ready only once the zygote has read every request.
const maxBatch = 4

// refiller makes the warm shells asked for, until none is.
func (p *Pool) refiller() {
	defer p.refills.Done()
	for {
		p.mu.Lock()
		n := min(p.wanted, maxBatch)
		if n == 0 || p.closed {
			p.wanted, p.refilling = 0, false
			p.mu.Unlock()
			return
		}
		p.wanted -= n
		p.mu.Unlock()
		for _, s := range p.startWarm(n) {
			p.stock(s)
		}
	}
}

// stock adds warm shell s to the ready ones, or stops it if the pool is
// closed. It never blocks: shells holds idleShells and one for each call
// that may be waiting for one.
func (p *Pool) stock(s *shell) {
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.shells <- s
	}
	p.mu.Unlock()
	if closed {
		s.discard()
	}
}

// shell is a started shell with its pipes.
type shell struct {
	proc           *child
	status         syscall.WaitStatus // set by wait
	waited         bool               // wait has reaped the shell
	ctl            *os.File           // command channel of a warm shell, write end
	stdin          *os.File           // write end; nil when stdin is /dev/null
	stdout, stderr *os.File           // read ends
	// The shell's ends of the pipes, until it has them.
	ctlR, inR, outW, errW *os.File
	err                   error // set when the shell could not be started
	reaper                *reap.Reaper
}

// wait waits for the shell process and tells the reaper it is gone.
func (s *shell) wait() error {
	status, err := s.proc.wait()
	s.status, s.waited = status, err == nil
	s.reaper.Forget(s.proc.pid)
	return err
}

// NewPool starts the fork server and the first warm shell, and returns
// without waiting for them; a shell that is not there is an error here.
// It marks the descriptors the process inherited close-on-exec (see
// proc.CloseInheritedOnExec).
func NewPool(opts Options) (*Pool, error) {
	if opts.Shell == "" {
		opts.Shell = "/bin/sh"
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.MaxStream <= 0 {
		opts.MaxStream = MaxStream
	}
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	// Commands get the descriptors the pool hands them, never one this
	// process inherited without close-on-exec.
	proc.CloseInheritedOnExec()
	// The zygote's variable is boxsh's own; an inherited one would stand
	// in its way.
	opts.Env = slices.DeleteFunc(slices.Clone(opts.Env), func(kv string) bool { return strings.HasPrefix(kv, zygoteFDEnv+"=") })
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("bash: %w", err)
	}
	// A shell that is not there is refused now, not at the first call.
	if _, err := exec.LookPath(opts.Shell); err != nil {
		_ = devNull.Close()
		return nil, fmt.Errorf("start shell %s: %w", opts.Shell, err)
	}
	p := &Pool{opts: opts, done: make(chan struct{}), devNull: devNull, running: make(map[int]struct{}), lingering: make(map[int]struct{}),
		shells: make(chan *shell, opts.Workers+idleShells), warmedUp: make(chan struct{})}
	// The fork server and the first warm shell start while boxsh-init
	// gets ready and the first call comes. A call that comes before they
	// are ready gets a shell started by exec, as without a fork server,
	// which takes less than the fork server's start (~0.8 against ~1.4 ms).
	p.refills.Add(1)
	go func() {
		defer p.refills.Done()
		defer close(p.warmedUp)
		if opts.ForkServer != "" {
			// No zygote here is this system's lot (no library, a static
			// shell, LD_PRELOAD set): the pool does without, for good.
			if err := p.startZygote(); err != nil {
				opts.Log.Debug("no fork server; shells start by exec", "error", err)
			}
		}
		p.stock(p.startShell(nil))
	}()
	p.short.Store(idleShells - 1)
	for i := 0; i < opts.Workers; i++ {
		p.free = append(p.free, &worker{})
		p.workers.Add(1)
	}
	return p, nil
}

// Reserve takes a place in line for a worker without waiting. Places are
// served in the order Reserve is called; pass the ticket to Run.
func (p *Pool) Reserve() *Ticket {
	t := &Ticket{ch: make(chan *worker, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 && len(p.free) > 0 {
		w := p.free[0]
		p.free = p.free[1:]
		t.ch <- w
	} else {
		p.queue = append(p.queue, t)
	}
	return t
}

// queued tells whether calls wait for a worker.
func (p *Pool) queued() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue) > 0
}

// release hands a worker to the next caller in line, or back to the pool.
func (p *Pool) release(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.workers.Done()
		return
	}
	for len(p.queue) > 0 {
		t := p.queue[0]
		// The slot let go of: a ticket left in the array would keep its
		// call's state (closures, context) alive after the call.
		p.queue[0] = nil
		p.queue = p.queue[1:]
		if !t.abandoned {
			t.ch <- w
			if t.granted != nil {
				t.granted()
			}
			return
		}
	}
	p.free = append(p.free, w)
}

// Abandon gives up a ticket that will not be run.
func (p *Pool) Abandon(t *Ticket) {
	if t != nil {
		p.abandon(t)
	}
}

// abandon gives up a ticket's place in line (and its worker, if it was
// already handed one).
func (p *Pool) abandon(t *Ticket) {
	p.mu.Lock()
	t.abandoned = true
	p.mu.Unlock()
	select {
	case w := <-t.ch:
		p.release(w)
	default:
	}
}

// acquire waits for the ticket's worker.
func (p *Pool) acquire(ctx context.Context, t *Ticket) (*worker, error) {
	select {
	case w := <-t.ch:
		return w, nil
	case <-ctx.Done():
	case <-p.done:
	}
	p.abandon(t)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, errors.New("bash: pool closed")
}

// startShell starts a shell. With no command it is a warm shell waiting for
// one, cloned from the zygote (a shell with errNoZygote if there is none);
// otherwise it runs `<shell> -c command` in dir (or the pool's directory)
// with env (or the pool's environment). Its stdin is a pipe when the call
// gives stdin, else /dev/null. Failures are recorded in the result.
func (p *Pool) startShell(c *coldStart) *shell {
	if c == nil {
		return p.startWarm(1)[0]
	}
	return p.newShell(c, func(s *shell) (*child, error) {
		proc, err := p.execShell(s, c)
		if err != nil {
			err = fmt.Errorf("start shell %s: %w", p.opts.Shell, err)
		}
		return proc, err
	})
}

// newShell makes the pipes of a shell for c (nil: a warm shell) and starts
// it with start, which hands the shell its ends of them, through the
// reaper. Failures are recorded in the result.
func (p *Pool) newShell(c *coldStart, start func(*shell) (*child, error)) *shell {
	s := &shell{reaper: p.opts.Reaper}
	p.makePipes(s, c)
	if s.err != nil {
		return s
	}
	err := s.reaper.Start(func() (int, error) {
		proc, err := start(s)
		if err != nil {
			return 0, err
		}
		s.proc = proc
		return proc.pid, nil
	})
	s.closeShellEnds()
	if err != nil {
		s.closeOurEnds()
		s.err = err
	}
	return s
}

// startWarm starts n warm shells, cloned from the zygote in one exchange
// (shells with errNoZygote if there is none), through the reaper.
// Failures are recorded in the results.
func (p *Pool) startWarm(n int) []*shell {
	shells := make([]*shell, n)
	z := p.zygote.Load()
	if z == nil {
		for i := range shells {
			shells[i] = &shell{err: errNoZygote}
		}
		return shells
	}
	var made []*shell
	for i := range shells {
		s := &shell{reaper: p.opts.Reaper}
		p.makePipes(s, nil)
		shells[i] = s
		if s.err == nil {
			made = append(made, s)
		}
	}
	var failed error
	p.opts.Reaper.StartEach(func(started func(pid int)) {
		failed = z.spawnEach(p.devNull, made, func(s *shell, c *child, err error) {
			if err != nil {
				s.err = err
				return
			}
			s.proc = c
			started(c.pid)
		})
	})
	for _, s := range made {
		s.closeShellEnds()
		if s.err != nil {
			s.closeOurEnds()
		}
	}
	if failed != nil {
		// Those calls start their shells by exec, on fresh pipes: a clone
		// made before the zygote failed to answer may hold the ones it was
		// sent (it finds them closed, and exits).
		p.zygoteFailed(z, failed)
	}
	return shells
}

// makePipes makes the pipes of a shell for c (nil: a warm shell),
// recording a failure in s.err.
func (p *Pool) makePipes(s *shell, c *coldStart) {
	pipe := func(pollRead bool) (r, w *os.File) {
		if s.err != nil {
			return nil, nil
		}
		r, w, s.err = newPipe(pollRead)
		return r, w
	}
	if c == nil {
		s.ctlR, s.ctl = pipe(false)
	} else if c.stdin {
		s.inR, s.stdin = pipe(false)
	}
	s.stdout, s.outW = pipe(true)
	s.stderr, s.errW = pipe(true)
	if s.err != nil {
		s.closeShellEnds()
		s.closeOurEnds()
		s.err = fmt.Errorf("start shell: %w", s.err)
	}
}

// closeShellEnds closes the pipe ends the shell was given, once it has
// them (or could not be started).
func (s *shell) closeShellEnds() {
	closeFiles(s.ctlR, s.inR, s.outW, s.errW)
	s.ctlR, s.inR, s.outW, s.errW = nil, nil, nil, nil
}

// closeOurEnds closes the pool's ends of the pipes of a shell that could
// not be started.
func (s *shell) closeOurEnds() {
	closeFiles(s.ctl, s.stdin, s.stdout, s.stderr)
	s.ctl, s.stdin, s.stdout, s.stderr = nil, nil, nil, nil
}

func closeFiles(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}

// shellArgv is the command line that runs script in the pool's shell,
// under the pool's limits.
func (p *Pool) shellArgv(script string) []string {
	return p.opts.Limits.Wrap(p.opts.LimitsExe, []string{p.opts.Shell, "-c", script})
}

// execShell starts the cold start c by exec, with stdin s.inR (nil:
// /dev/null).
func (p *Pool) execShell(s *shell, c *coldStart) (*child, error) {
	argv := p.shellArgv(c.command)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = p.opts.Env, p.opts.Dir
	if c.env != nil {
		cmd.Env = c.env
	}
	if c.dir != "" {
		cmd.Dir = c.dir
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.devNull, s.outW, s.errW
	if s.inR != nil {
		cmd.Stdin = s.inR
	}
	cmd.SysProcAttr = procAttr()
	// The shell is waited for through its Process: with files for all its
	// streams, exec.Cmd's own Wait has nothing more to do.
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch, err := execChild(cmd.Process)
	if err != nil {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		return nil, err
	}
	return ch, nil
}

// startZygote starts the zygote from which warm shells are cloned. A
// zygote that cannot start leaves the pool starting shells by exec.
func (p *Pool) startZygote() error {
	z, err := startZygote(p.opts.ForkServer, p.opts.Shell, p.opts.Limits, p.opts.Env, p.opts.Dir, p.devNull, p.opts.Reaper)
	if err != nil {
		return err
	}
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.zygote.Store(z)
	}
	p.mu.Unlock()
	if closed {
		z.close()
	}
	return nil
}

// Delays before a new zygote is started after one failed, doubling while
// starting fails; meanwhile shells start by exec.
const (
	zygoteRestartDelay    = time.Second
	maxZygoteRestartDelay = time.Minute
)

// zygoteFailed gives up zygote z, which could not clone a shell (killed
// by a command, say), and starts a new one a little later.
func (p *Pool) zygoteFailed(z *zygote, err error) {
	if !p.zygote.CompareAndSwap(z, nil) {
		return
	}
	p.opts.Log.Warn("fork server failed; restarting it", "error", err)
	go z.close()
	p.restartZygote(zygoteRestartDelay)
}

// restartZygote starts a new zygote after delay, and tries again, later
// each time, while that fails.
func (p *Pool) restartZygote(delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.zygoteRestart = time.AfterFunc(delay, func() {
		if err := p.startZygote(); err != nil {
			next := min(2*delay, maxZygoteRestartDelay)
			p.opts.Log.Warn("fork server did not start; trying again", "error", err, "in", next)
			p.restartZygote(next)
		}
	})
}

// stopZygote stops the zygote, if any.
func (p *Pool) stopZygote() {
	if z := p.zygote.Swap(nil); z != nil {
		z.close()
	}
}

// coldStart describes a call that needs a shell of its own making.
type coldStart struct {
	command string
	dir     string
	env     []string
	stdin   bool // give the shell a pipe as stdin
}

// discard stops an unused warm shell.
func (s *shell) discard() {
	if s.err != nil {
		return
	}
	_ = syscall.Kill(-s.proc.pid, syscall.SIGKILL)
	_ = s.ctl.Close()
	_ = s.stdout.Close()
	_ = s.stderr.Close()
	_ = s.wait()
}

// Run runs one bash call on the ticket's worker, waiting for it first
// (a nil ticket takes a place in line now). Cancelling ctx kills the
// command's process group; the returned output then reports what was
// collected so far.
func (p *Pool) Run(ctx context.Context, t *Ticket, args tool.BashArgs) (tool.BashOutput, error) {
	out, release, err := p.RunHold(ctx, t, args)
	release()
	return out, err
}

// RunHold is Run, except that the worker stays taken until release is
// called: a caller that hands the output on (to a client that may read
// slowly) releases the worker once it is delivered, so that results of a
// stalled client cannot pile up. release is never nil.
func (p *Pool) RunHold(ctx context.Context, t *Ticket, args tool.BashArgs) (out tool.BashOutput, release func(), err error) {
	release = func() {}
	if t == nil {
		t = p.Reserve()
	}
	if args.Args != nil {
		if args.Command, err = argvCommand(args.Args); err != nil {
			p.abandon(t)
			return out, release, err
		}
	}
	if args.Cwd != "" {
		fi, err := os.Stat(args.Cwd)
		if err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
		if err != nil {
			p.abandon(t)
			return out, release, fmt.Errorf("cwd %s: %s", args.Cwd, tool.ErrorText(err))
		}
	}
	w, err := p.acquire(ctx, t)
	if err != nil {
		return out, release, err
	}
	if t.started != nil {
		t.started()
	}
	warm, refillLater := p.takeShell()
	if refillLater && p.queued() {
		// Calls wait for a worker (a burst): the next one to start takes
		// a shell now, so its replacement is made at once, not when this
		// call is answered: the next call then finds one ready.
		p.refill()
		refillLater = false
	}
	release = sync.OnceFunc(func() {
		if refillLater {
			p.refill()
		}
		for range p.short.Swap(0) {
			p.refill()
		}
		p.release(w)
	})
	if errors.Is(warm.err, errPoolClosed) {
		return out, release, warm.err
	}
	out, err = p.runOn(ctx, warm, args)
	return out, release, err
}

// runOn runs a call, on a worker the caller holds, in warm shell warm
// (or in a shell of its own, see coldStart).
func (p *Pool) runOn(ctx context.Context, warm *shell, args tool.BashArgs) (tool.BashOutput, error) {
	start := time.Now()
	s := warm
	// pending is a command longer than pipeAtomic, written once the call's
	// timeout and cancellation hold: a stopped shell would block the write.
	var pending []byte
	if args.Cwd != "" || len(args.Env) > 0 || args.Stdin != "" || !p.warmAccepts(warm, args.Command) {
		warm.discard()
		s = p.startShell(&coldStart{command: args.Command, dir: args.Cwd, env: p.env(args.Env), stdin: args.Stdin != ""})
		if s.err != nil {
			return tool.BashOutput{}, s.err
		}
	} else if pending = p.message(args.Command); len(pending) <= pipeAtomic {
		_, err := s.ctl.Write(pending)
		pending = nil
		if err != nil {
			// The warm shell is gone (killed from outside): start one now.
			warm.discard()
			s = p.startShell(&coldStart{command: args.Command})
			if s.err != nil {
				return tool.BashOutput{}, s.err
			}
		}
	}
	if s.ctl != nil && pending == nil {
		_ = s.ctl.Close()
	}
	return p.run(ctx, s, args, start, pending)
}

// pipeAtomic is what an empty pipe always takes without blocking.
const pipeAtomic = 4096

// warmAccepts tells whether warm shell s can run command: not when it
// could not be made, nor for commands with a NUL byte, which no shell
// argument can hold (exec refuses them: so does the shell started for
// them).
func (p *Pool) warmAccepts(s *shell, command string) bool {
	return s.err == nil && strings.IndexByte(command, 0) < 0
}

// message is what hands command to a warm shell: its length (4 bytes,
// native order) and the command.
func (p *Pool) message(command string) []byte {
	b := binary.NativeEndian.AppendUint32(make([]byte, 0, 4+len(command)), uint32(len(command)))
	return append(b, command...)
}

// run runs the call on started shell s and collects its output; pending,
// if any, is the command still to be written to the shell's command pipe.
func (p *Pool) run(ctx context.Context, s *shell, args tool.BashArgs, start time.Time, pending []byte) (tool.BashOutput, error) {
	pgid := s.proc.pid
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = s.wait()
		closeFiles(s.stdout, s.stderr, s.stdin)
		if pending != nil {
			_ = s.ctl.Close()
		}
		return tool.BashOutput{}, errors.New("bash: pool closed")
	}
	p.running[pgid] = struct{}{}
	p.mu.Unlock()
	defer p.finished(pgid)

	if s.stdin != nil {
		go func() {
			_, _ = io.WriteString(s.stdin, args.Stdin)
			_ = s.stdin.Close()
		}()
	}
	if pending != nil {
		// Killing the shell (timeout, cancellation, Close) ends the write.
		go func() {
			_, _ = s.ctl.Write(pending)
			_ = s.ctl.Close()
		}()
	}

	stdout := &capped{max: p.opts.MaxStream}
	stderr := &capped{max: p.opts.MaxStream}
	var drained sync.WaitGroup
	drained.Add(2)
	go func() { defer drained.Done(); stdout.readFrom(counted(ctx, s.stdout)) }()
	go func() { defer drained.Done(); stderr.readFrom(counted(ctx, s.stderr)) }()

	var timeout <-chan time.Time
	if args.Timeout > 0 {
		t := time.NewTimer(secondsDuration(args.Timeout))
		defer t.Stop()
		timeout = t.C
	}
	waited := make(chan error, 1)
	go func() { waited <- s.wait() }()

	var timedOut, cancelled bool
	select {
	case <-waited:
	case <-timeout:
		timedOut = true
	case <-ctx.Done():
		cancelled = true
	}
	if timedOut || cancelled {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
	}
	// Collect what is already in the pipes; do not wait for background
	// processes that inherited them.
	deadline := time.Now().Add(drainGrace)
	_ = s.stdout.SetReadDeadline(deadline)
	_ = s.stderr.SetReadDeadline(deadline)
	drained.Wait()
	_ = s.stdout.Close()
	_ = s.stderr.Close()

	out := tool.BashOutput{
		Stdout:          stdout.String(),
		Stderr:          stderr.String(),
		StdoutTruncated: stdout.truncated,
		StderrTruncated: stderr.truncated,
		DurationMS:      time.Since(start).Milliseconds(),
	}
	switch {
	case timedOut:
		out.ExitCode, out.Stderr = -1, "timeout"
		return out, nil
	case cancelled:
		return out, ctx.Err()
	}
	out.ExitCode, out.Signal = exitStatus(s.status, s.waited)
	return out, nil
}

// finished records the end of the call whose shell led process group pgid:
// the group is remembered if background processes still belong to it, and
// groups remembered before are forgotten once empty.
func (p *Pool) finished(pgid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, pgid)
	if syscall.Kill(-pgid, 0) == nil {
		p.lingering[pgid] = struct{}{}
	}
	for g := range p.lingering {
		if g != pgid && syscall.Kill(-g, 0) != nil {
			delete(p.lingering, g)
		}
	}
}

// exitStatus maps a wait status to the shell's convention: the exit
// status, or 128+N for death by signal N; -1 when the shell was not
// waited for.
func exitStatus(ws syscall.WaitStatus, waited bool) (int, string) {
	if !waited {
		return -1, ""
	}
	if ws.Signaled() {
		return proc.WaitStatus(ws), signalName(ws.Signal())
	}
	return proc.WaitStatus(ws), ""
}

// env merges the call's variables over the base environment.
func (p *Pool) env(extra map[string]string) []string {
	if len(extra) == 0 {
		return p.opts.Env
	}
	env := make([]string, 0, len(p.opts.Env)+len(extra))
	for _, kv := range p.opts.Env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := extra[k]; !ok {
			env = append(env, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// Close kills the process groups of every running command and of the
// background processes that finished calls left, and stops the idle
// shells. Calls still waiting for a worker fail.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	if p.zygoteRestart != nil {
		p.zygoteRestart.Stop()
	}
	for pgid := range p.running {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	for pgid := range p.lingering {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	free := p.free
	p.free = nil
	p.mu.Unlock()
	p.stopZygote()
	for range free {
		p.workers.Done()
	}
	p.workers.Wait()
	p.refills.Wait()
	for len(p.shells) > 0 {
		(<-p.shells).discard()
	}
	_ = p.devNull.Close()
}

// capped collects a stream up to a limit, and drains the rest.
type capped struct {
	bytes.Buffer
	max       int
	truncated bool
}

func (c *capped) readFrom(r io.Reader) {
	// Read straight into the buffer's memory, then drain what is over the
	// cap.
	n, err := c.ReadFrom(io.LimitReader(r, int64(c.max)))
	if err == nil && n == int64(c.max) {
		if extra, _ := io.Copy(io.Discard, r); extra > 0 {
			c.truncated = true
		}
	}
}

// secondsDuration converts a timeout in seconds to a Duration, clamping
// what a Duration cannot hold (1e10 s and more: about 292 years) to the
// longest Duration rather than letting the conversion overflow into a
// timeout that fires at once.
func secondsDuration(s float64) time.Duration {
	const max = float64(math.MaxInt64) / float64(time.Second)
	if s >= max || math.IsNaN(s) {
		return math.MaxInt64
	}
	return time.Duration(s * float64(time.Second))
}
