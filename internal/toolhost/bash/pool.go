// Package bash runs the bash tool, each call in a fresh shell in its own
// process group.
//
// Calls run on a bounded number of workers. Calls beyond the number of workers
// wait in arrival order.
//
// # Warm shells
//
// Starting a shell by exec costs more than the rest of a call. So on Linux,
// with the fork-server library (Options.ForkServer), the pool keeps the next
// call's shell already made: a "warm" shell. A warm shell is cloned from a
// zygote, one shell started with the library preloaded, which clones itself
// before its main runs (see zygote/zygote.c). Each warm shell is a new process
// used once. It has the pool's environment and directory and /dev/null as
// stdin, and waits for its command before the shell's main starts; then it
// runs as `<shell> -c COMMAND`.
//
// A call sees what a fresh `sh -c COMMAND </dev/null` would see: $0 is the
// shell, $$ its own PID, and no variables, aliases, functions or directory
// changes of earlier calls. A call starts a shell by exec instead when it asks
// for its own directory, environment or stdin, or when there is no zygote.
//
// # Security
//
// The zygote and the warm shells are not dumpable until a warm shell has its
// command. So no command can read or write their memory (/proc/PID/mem) and
// plant code in a later call's shell. A shell started by exec cannot be kept
// that way while it waits: exec makes it dumpable, and a shell cannot turn
// that off. So no shell is started by exec ahead of its call.
package bash

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/toolhost/reap"
)

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
	// leaves their exit status to the pool. It is nil when boxsh-init is
	// not PID 1.
	Reaper *reap.Reaper
	// ForkServer is the fork-server library (boxsh-zygote.so, see
	// proc.FindForkServer) from which warm shells are cloned. When it is
	// empty, or cannot serve, every shell is started by exec. It cannot
	// serve on other systems than Linux, with a static shell, or in an
	// environment with its own LD_PRELOAD.
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
	// own replacement, to bring shells to idleShells. At start-up only one
	// is made, so that on a cold start the first call does not share the
	// processor with more shell start-ups.
	short atomic.Int32
	// drainGrace is how long output is still awaited after the shell
	// exits: the constant drainGrace, which tests shorten.
	drainGrace time.Duration

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

// NewPool starts the fork server and the first warm shell, and returns without
// waiting for them.
//
// A shell that is not there is an error here. NewPool marks the descriptors
// the process inherited close-on-exec (see proc.CloseInheritedOnExec).
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
		shells: make(chan *shell, opts.Workers+idleShells), warmedUp: make(chan struct{}), drainGrace: drainGrace}
	// The fork server and the first warm shell start while boxsh-init
	// gets ready and the first call comes. A call that comes before they
	// are ready gets a shell started by exec, as without a fork server,
	// which takes less than the fork server's start (see docs/perf.md).
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

// Close kills the process groups of every running command, and of the
// background processes that finished calls left.
//
// It also stops the idle shells. Calls still waiting for a worker fail.
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
