// Package idle returns a process's memory to the system once it has been idle
// a while.
//
// After a burst of calls, the Go heap keeps what it grew to. Its next
// collection is due only when it grows again, and the runtime's scavenger
// returns little of the excess. Without this package, a server that answered
// many calls would hold well over its idle memory for good. After a longer
// while, the package also drops the process's mappings of its own executable,
// which the kernel maps whole (see ReleaseExecutable).
package idle

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Delay is how long the process must have had no call running before its
// memory is returned.
//
// It is longer than the pauses between an agent's quick calls, and than a
// client takes to read a large answer before its next call: a heap returned
// between two large outputs costs the second one its page faults again. It is
// short beside a person's pauses.
const Delay = time.Second

// ReleaseDelay is how long the process must have had no call running before
// its mappings of its executable are dropped.
//
// The next call maps again what it uses, which costs it page faults. So the
// release must not come within an agent's pauses between the calls of one
// task, but while nobody is using the process. The first release comes once,
// with the first trim. It drops what only the start used (flags, policy, the
// sandbox's plan, every package's init), so the next call maps again only what
// calls use.
const ReleaseDelay = 10 * time.Second

// Trimmer counts the calls running and trims when none has run for its
// delay; then, if it has a release, it releases at once the first time,
// and after releaseDelay of idleness in all the next times. A release
// comes after the trim, whose collection would map again much of what it
// dropped.
type Trimmer struct {
	mu   sync.Mutex
	busy int
	// calls counts the calls begun: a trim waits for one since the last
	// (trimmedAt), a release for none since the trim.
	calls, trimmedAt int
	timer            *time.Timer
	trim             func()
	delay            time.Duration
	// grown tells whether the heap has grown since the last trim.
	grown func() bool
	// gcCycles is the runtime's count of collections when grown last
	// looked (see heapGrown).
	gcCycles atomic.Uint64

	// release releases, and returns what the next call to begin runs
	// (on its own goroutine) to map again what was released, or nil.
	release      func() func()
	releaseDelay time.Duration
	released     bool   // the first release has run
	repopulate   func() // from the last release, until a call begins
}

// NewTrimmer returns the trimmer of a process: it returns the free heap to
// the system after Delay with no call, if the heap grew since the last
// time, and drops the process's mappings of its executable after
// ReleaseDelay (see ReleaseExecutable). A program has one, and tells it
// when each of its calls begins and ends.
func NewTrimmer() *Trimmer {
	t := &Trimmer{trim: debug.FreeOSMemory, delay: Delay, release: releaseExecutable, releaseDelay: ReleaseDelay}
	t.grown = t.heapGrown
	return t
}

// releaseExecutable is ReleaseExecutable for the trimmer, which has no one
// to report a failure to: a process that cannot release its mappings
// keeps them, as it would without. The call that wakes the process maps
// them again at once, on another goroutine, as it starts: in one call
// per mapping, faster than its own faults would, one piece at a time.
func releaseExecutable() func() {
	r, _ := ReleaseExecutable()
	if len(r) == 0 {
		return nil
	}
	return r.Populate
}

// heapGrown tells whether a collection ran since it was last called: the
// heap reached its goal, a burst of calls allocated. Until then there is
// little to return, and a forced collection would add memory (the
// collector's own) rather than free some.
func (t *Trimmer) heapGrown() bool {
	var st debug.GCStats
	debug.ReadGCStats(&st)
	n := uint64(st.NumGC)
	grown := t.gcCycles.Swap(n) != n
	if grown {
		t.gcCycles.Store(n + 1) // the trim's own collection
	}
	return grown
}

// Begin notes that a call starts: no trim while it runs.
func (t *Trimmer) Begin() {
	t.mu.Lock()
	t.busy++
	t.calls++
	if t.timer != nil {
		t.timer.Stop()
	}
	repopulate := t.repopulate
	t.repopulate = nil
	t.mu.Unlock()
	if repopulate != nil {
		go repopulate()
	}
}

// End notes that a call ended; the last one arms the trim.
func (t *Trimmer) End() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.busy--; t.busy > 0 {
		return
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(t.delay, t.fire)
	} else {
		t.timer.Reset(t.delay)
	}
}

// fire trims unless a call started meanwhile, or none ran since the last
// trim, then releases or arms the release.
func (t *Trimmer) fire() {
	t.mu.Lock()
	ready := t.busy == 0 && t.calls != t.trimmedAt
	if ready {
		t.trimmedAt = t.calls
	}
	calls, first := t.calls, !t.released
	t.mu.Unlock()
	if !ready {
		return
	}
	if t.grown == nil || t.grown() {
		t.trim()
	}
	switch {
	case t.release == nil:
	case first:
		t.releaseIfIdle(calls)
	default:
		time.AfterFunc(t.releaseDelay-t.delay, func() { t.releaseIfIdle(calls) })
	}
}

// releaseIfIdle releases unless a call began since the count of calls
// was calls.
func (t *Trimmer) releaseIfIdle(calls int) {
	t.mu.Lock()
	idle := t.calls == calls
	if idle {
		t.released = true
	}
	t.mu.Unlock()
	if !idle {
		return
	}
	repopulate := t.release()
	t.mu.Lock()
	if t.calls == calls {
		t.repopulate = repopulate
	}
	t.mu.Unlock()
}
