package idle

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testDelay stands for Delay in the tests.
const testDelay = 100 * time.Millisecond

func newTrimmer() (*Trimmer, *atomic.Int32) {
	var n atomic.Int32
	return &Trimmer{trim: func() { n.Add(1) }, delay: testDelay}, &n
}

// The memory is returned once the last call has ended and testDelay passed,
// not while a call runs, and not again without calls in between.
func TestTrimOnceIdle(t *testing.T) {
	tr, n := newTrimmer()
	tr.Begin()
	tr.Begin()
	tr.End()
	time.Sleep(2 * testDelay)
	if got := n.Load(); got != 0 {
		t.Fatalf("trimmed %d times while a call ran", got)
	}
	tr.End()
	deadline := time.Now().Add(10 * testDelay)
	for n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(testDelay / 10)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("trimmed %d times once idle, want 1", got)
	}
	time.Sleep(2 * testDelay)
	if got := n.Load(); got != 1 {
		t.Fatalf("trimmed %d times, want 1: no call ran since the last", got)
	}
}

// A call that starts before testDelay has passed puts the trim off.
func TestCallPutsTrimOff(t *testing.T) {
	tr, n := newTrimmer()
	for range 5 {
		tr.Begin()
		tr.End()
		time.Sleep(testDelay / 4)
	}
	if got := n.Load(); got != 0 {
		t.Fatalf("trimmed %d times between calls testDelay/4 apart", got)
	}
}

// heapGrown tells of collections since it was last called, the forced
// collection of the trim that follows a true answer excepted.
func TestHeapGrown(t *testing.T) {
	gcCycles = 0
	runtime.GC()
	if !heapGrown() {
		t.Fatal("not grown after a collection")
	}
	runtime.GC() // the trim's
	if heapGrown() {
		t.Error("grown after the trim's own collection alone")
	}
	if heapGrown() {
		t.Error("grown without a collection")
	}
	runtime.GC()
	if !heapGrown() {
		t.Error("not grown after another collection")
	}
}

// The first release comes right after the first trim; the next ones once
// idle releaseDelay in all, and not when a call began meanwhile.
func TestRelease(t *testing.T) {
	var mu sync.Mutex
	var events []string
	note := func(e string) func() {
		return func() { mu.Lock(); events = append(events, e); mu.Unlock() }
	}
	got := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(events, " ")
	}
	release := func() func() { note("release")(); return note("repopulate") }
	tr := &Trimmer{trim: note("trim"), delay: testDelay, release: release, releaseDelay: 5 * testDelay}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * testDelay)
		for got() != want && time.Now().Before(deadline) {
			time.Sleep(testDelay / 10)
		}
		if g := got(); g != want {
			t.Fatalf("events %q, want %q", g, want)
		}
	}
	tr.Begin()
	tr.End()
	waitFor("trim release")
	tr.Begin()
	tr.End()
	time.Sleep(2 * testDelay) // trimmed, the release not yet due
	// The call that woke the process mapped again what was released.
	if g := got(); g != "trim release repopulate trim" {
		t.Fatalf("events %q 2 delays after the second call", g)
	}
	waitFor("trim release repopulate trim release")
	// A call that begins before the release is due puts it off.
	tr.Begin()
	tr.End()
	time.Sleep(2 * testDelay)
	tr.Begin()
	tr.End()
	time.Sleep(4 * testDelay) // the first spell's release would be due now
	if g := got(); g != "trim release repopulate trim release repopulate trim trim" {
		t.Fatalf("events %q: a release came though a call began", g)
	}
	waitFor("trim release repopulate trim release repopulate trim trim release")
}
