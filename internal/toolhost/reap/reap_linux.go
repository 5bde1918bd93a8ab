// Package reap lets PID 1 of a PID namespace reap orphans without taking the
// exit status of its own children.
//
// Every child the process starts goes through Reaper.Start, which records it
// until Reaper.Forget (called after the child's own Wait). The reaper reaps
// only the other children: the orphans the kernel reparented. Starting and
// reaping exclude each other, so a child that exits at once is known before
// the reaper can see it. The reaper costs one waitid per SIGCHLD. When one of
// the process's own children has exited and hides the others, it also lists
// the children.
package reap

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/proc"
)

// Reaper reaps the children that were not started through it. A nil
// *Reaper starts children and reaps nothing.
type Reaper struct {
	// starting is held for reading while children start, for writing
	// while reaping.
	starting sync.RWMutex

	mu    sync.Mutex
	known map[int]int // pid → children started with it not yet forgotten

	// forgot wakes Run when a child is forgotten: a zombie of ours that
	// hid others from waitid is gone.
	forgot chan struct{}
	// reaps counts Run's reaps (for the tests).
	reaps atomic.Int64
	// intervals, when set (by tests, before Run), ends each interval
	// between two reaps instead of reapInterval: Run receives from it.
	intervals chan struct{}
}

// New returns a Reaper; Run makes it reap.
func New() *Reaper {
	return &Reaper{known: make(map[int]int), forgot: make(chan struct{}, 1)}
}

// Start starts a child with start, and records the child as one whose exit
// status its own Wait takes.
//
// start is cmd.Start, pty.Start or the like, and returns the child's pid. Call
// Forget once that Wait has returned.
func (r *Reaper) Start(start func() (int, error)) error {
	if r == nil {
		_, err := start()
		return err
	}
	r.starting.RLock()
	defer r.starting.RUnlock()
	pid, err := start()
	if err == nil {
		r.mu.Lock()
		r.known[pid]++
		r.mu.Unlock()
	}
	return err
}

// StartEach is Start for children started together: start calls started
// with the pid of each child it started.
func (r *Reaper) StartEach(start func(started func(pid int))) {
	if r == nil {
		start(func(int) {})
		return
	}
	r.starting.RLock()
	defer r.starting.RUnlock()
	start(func(pid int) {
		r.mu.Lock()
		r.known[pid]++
		r.mu.Unlock()
	})
}

// Forget drops a child recorded by Start, after its Wait has returned.
func (r *Reaper) Forget(pid int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.known[pid]--; r.known[pid] <= 0 {
		delete(r.known, pid)
	}
	r.mu.Unlock()
	select {
	case r.forgot <- struct{}{}:
	default:
	}
}

func (r *Reaper) isKnown(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.known[pid] > 0
}

// retryDelay is how soon the reaper looks again, child by child, when an
// exited child of its own hides the others and is not forgotten
// meanwhile. That child's own Wait will take it. The delay doubles up to
// maxRetryDelay while a child stays so: a warm shell killed while idle is
// waited for only when a call takes it.
//
// Usually Forget wakes the reaper first. Under a steady load of calls,
// some child of its own has always just exited, and the reaper would
// otherwise look child by child (through /proc) every few milliseconds.
const (
	retryDelay    = 100 * time.Millisecond
	maxRetryDelay = time.Second
)

// reapInterval is the shortest time between two reaps. An orphan stays a
// zombie that much longer.
//
// Every command's shell that exits signals SIGCHLD. In a burst of calls, a
// reap at each signal would wake the reaper twice a call (the signal, then
// Forget) for a reap that finds only the pool's own shell. Signals that come
// within the interval make one reap at its end.
const reapInterval = 5 * time.Millisecond

// Run reaps at every SIGCHLD, at most once per reapInterval, until ctx
// ends.
func (r *Reaper) Run(ctx context.Context) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	pause := time.NewTimer(time.Hour)
	pause.Stop()
	delay := retryDelay
	blocked := false
	for {
		r.reaps.Add(1)
		if _, blocked = r.reap(); blocked {
			retry.Reset(delay)
		} else {
			delay = retryDelay
		}
		// What comes during the interval waits for its end.
		if !r.waitInterval(ctx, pause) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-sigs:
		case <-r.forgot:
		case <-retry.C:
			if blocked {
				r.reapEach()
				delay = min(2*delay, maxRetryDelay)
			}
		}
	}
}

// waitInterval waits out the interval after a reap with pause (or until
// the test ends it, see Reaper.intervals), and reports false if ctx ended
// first.
func (r *Reaper) waitInterval(ctx context.Context, pause *time.Timer) bool {
	end := r.intervals
	if end == nil {
		pause.Reset(reapInterval)
		select {
		case <-ctx.Done():
			return false
		case <-pause.C:
			return true
		}
	}
	select {
	case <-ctx.Done():
		return false
	case <-end:
		return true
	}
}

// reapEach reaps, one by one, the children (from /proc) that exited and
// were not started through Start.
func (r *Reaper) reapEach() {
	r.starting.Lock()
	defer r.starting.Unlock()
	for _, pid := range proc.Children() {
		if !r.isKnown(pid) {
			reaped(pid)
		}
	}
}

// Reap reaps every child that has exited and was not started through
// Start, as far as it can see them now, and returns how many it reaped.
func (r *Reaper) Reap() int {
	n, _ := r.reap()
	return n
}

// reap reaps exited children that are not recorded.
//
// The kernel shows exited children one at a time, without reaping them
// (WNOWAIT). When the first is one of ours, the ones behind it stay hidden
// until its Wait has taken it. reap then reports blocked, so that Run looks
// again soon.
func (r *Reaper) reap() (n int, blocked bool) {
	if r == nil {
		return 0, false
	}
	r.starting.Lock()
	defer r.starting.Unlock()
	for {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
			return n, false
		}
		pid := siginfoPid(&info)
		if pid <= 0 {
			return n, false // none has exited
		}
		if r.isKnown(pid) {
			return n, true
		}
		if !reaped(pid) {
			return n, false
		}
		n++
	}
}

// reaped reaps pid if it has exited.
func reaped(pid int) bool {
	var ws unix.WaitStatus
	got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	return err == nil && got == pid
}

// siginfoPid is si_pid of a SIGCHLD siginfo_t: the first field of the
// union that follows si_signo, si_errno and si_code, aligned to a pointer.
func siginfoPid(info *unix.Siginfo) int {
	off := (3*unsafe.Sizeof(int32(0)) + unsafe.Sizeof(uintptr(0)) - 1) &^ (unsafe.Sizeof(uintptr(0)) - 1)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}
