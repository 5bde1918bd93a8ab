package idle

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The tests run in a synctest bubble: time.Sleep advances the bubble's
// clock, and the trimmer's timers fire at their exact times, so the tests
// use the real delays and wait for nothing.

func newTrimmer() (*Trimmer, *atomic.Int32) {
	var n atomic.Int32
	return &Trimmer{trim: func() { n.Add(1) }, delay: Delay}, &n
}

// The memory is returned once the last call has ended and Delay passed,
// not while a call runs, and not again without calls in between.
func TestTrimOnceIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, n := newTrimmer()
		tr.Begin()
		tr.Begin()
		tr.End()
		time.Sleep(2 * Delay)
		if got := n.Load(); got != 0 {
			t.Fatalf("trimmed %d times while a call ran", got)
		}
		tr.End()
		time.Sleep(Delay - time.Nanosecond)
		synctest.Wait()
		if got := n.Load(); got != 0 {
			t.Fatalf("trimmed %d times before Delay passed", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := n.Load(); got != 1 {
			t.Fatalf("trimmed %d times once idle for Delay, want 1", got)
		}
		time.Sleep(10 * Delay)
		if got := n.Load(); got != 1 {
			t.Fatalf("trimmed %d times, want 1: no call ran since the last", got)
		}
	})
}

// A call that starts before Delay has passed puts the trim off.
func TestCallPutsTrimOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, n := newTrimmer()
		for range 20 {
			tr.Begin()
			tr.End()
			time.Sleep(Delay - time.Millisecond)
		}
		synctest.Wait()
		if got := n.Load(); got != 0 {
			t.Fatalf("trimmed %d times between calls just under Delay apart", got)
		}
	})
}

// heapGrown tells of collections since it was last called, the forced
// collection of the trim that follows a true answer excepted.
func TestHeapGrown(t *testing.T) {
	tr := NewTrimmer()
	runtime.GC()
	if !tr.heapGrown() {
		t.Fatal("not grown after a collection")
	}
	runtime.GC() // the trim's
	if tr.heapGrown() {
		t.Error("grown after the trim's own collection alone")
	}
	if tr.heapGrown() {
		t.Error("grown without a collection")
	}
	runtime.GC()
	if !tr.heapGrown() {
		t.Error("not grown after another collection")
	}
}

// The first release comes right after the first trim; the next ones once
// idle ReleaseDelay in all, and not when a call began meanwhile.
func TestRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var events []string
		note := func(e string) func() {
			return func() { mu.Lock(); events = append(events, e); mu.Unlock() }
		}
		check := func(when, want string) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			if g := strings.Join(events, " "); g != want {
				t.Fatalf("%s: events %q, want %q", when, g, want)
			}
		}
		release := func() func() { note("release")(); return note("repopulate") }
		tr := &Trimmer{trim: note("trim"), delay: Delay, release: release, releaseDelay: ReleaseDelay}
		tr.Begin()
		tr.End()
		time.Sleep(Delay)
		check("first trim", "trim release")
		tr.Begin()
		tr.End()
		time.Sleep(Delay)
		// The call that woke the process mapped again what was released;
		// the next release is not due yet.
		check("second trim", "trim release repopulate trim")
		time.Sleep(ReleaseDelay - Delay - time.Nanosecond)
		check("just before the release", "trim release repopulate trim")
		time.Sleep(time.Nanosecond)
		check("ReleaseDelay idle", "trim release repopulate trim release")
		// A call that begins before the release is due puts it off.
		tr.Begin()
		tr.End()
		time.Sleep(2 * Delay)
		tr.Begin()
		tr.End()
		time.Sleep(ReleaseDelay - 2*Delay) // the first spell's release would be due now
		check("a call began", "trim release repopulate trim release repopulate trim trim")
		time.Sleep(2 * Delay)
		check("ReleaseDelay after the last call", "trim release repopulate trim release repopulate trim trim release")
	})
}
