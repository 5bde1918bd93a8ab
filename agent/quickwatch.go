package agent

import (
	"sync/atomic"
	"time"
)

// quickHandOn is how long a quick read (see serving.quick) may hold up the
// reading of frames: one that takes longer (a file on a stuck network or
// FUSE mount bound into the sandbox) hands the reading on to a new
// goroutine, so that the calls after it are not held up with it.
const quickHandOn = 5 * time.Millisecond

// quickWatch hands the reading of frames on when a quick read takes longer
// than quickHandOn. One timer watches every quick read: a read that starts
// arms it if it is not armed, and each time it fires it arms itself again
// only for a read still running. A run of reads thus arms it once per
// quickHandOn, not once each: arming a timer wakes the runtime's poller,
// which cost a back-to-back read of a small file ~7% of its time.
type quickWatch struct {
	epoch  time.Time // the origin of started, a monotonic time
	handOn func()    // starts a new reading goroutine
	// started is when the running quick read started (nanoseconds after
	// epoch, plus one), 0 when none runs, -1 once it was handed on.
	started atomic.Int64
	armed   atomic.Bool
	timer   *time.Timer
}

func newQuickWatch(handOn func()) *quickWatch {
	w := &quickWatch{epoch: time.Now(), handOn: handOn}
	w.timer = time.AfterFunc(time.Hour, w.fire)
	w.timer.Stop()
	return w
}

func (w *quickWatch) now() int64 { return int64(time.Since(w.epoch)) + 1 }

// begin notes that a quick read starts on the reading goroutine, and
// returns the token to pass to end.
func (w *quickWatch) begin() int64 {
	t := w.now()
	w.started.Store(t)
	if w.armed.CompareAndSwap(false, true) {
		w.timer.Reset(quickHandOn)
	}
	return t
}

// end notes that the quick read begin returned token t for has ended. It
// tells whether the reading was handed on meanwhile: the caller, no longer
// the reading goroutine, must then read no more frames.
func (w *quickWatch) end(t int64) (handedOn bool) {
	return !w.started.CompareAndSwap(t, 0)
}

// fire hands the reading on if the running quick read is late, or waits
// on for it.
func (w *quickWatch) fire() {
	w.armed.Store(false)
	t := w.started.Load()
	if t <= 0 {
		return
	}
	if late := time.Duration(w.now() - t); late < quickHandOn {
		if w.armed.CompareAndSwap(false, true) {
			w.timer.Reset(quickHandOn - late)
		}
		return
	}
	if w.started.CompareAndSwap(t, -1) {
		w.handOn()
	}
}

// stop stops the timer, for good.
func (w *quickWatch) stop() { w.timer.Stop() }
