package toolhost

import (
	"sync/atomic"
	"time"
)

// quickHandOn is how long a quick read (see serving.quick) may hold up the
// reading of frames. A read that takes longer hands the reading on to a
// new goroutine, so that the calls after it are not held up with it. Such
// a read may be of a file on a stuck network or FUSE mount bound into the
// sandbox.
const quickHandOn = 5 * time.Millisecond

// quickWatch hands the reader on when a quick read takes longer than
// quickHandOn. The reading goroutine lends it the reader for the read
// (begin) and takes it back after (end). If the read is late, the watch
// hands the reader to a new goroutine instead, and end gives nothing back.
//
// One timer watches every quick read. A read that starts arms it if it is
// not armed. Each time the timer fires, it arms itself again only for a
// read still running. So a run of reads arms it once per quickHandOn, not
// once each. Arming a timer wakes the runtime's poller, which costs a
// back-to-back read of a small file a measurable share of its time (see
// docs/perf.md).
type quickWatch struct {
	epoch  time.Time     // the origin of started, a monotonic time
	handOn func(*reader) // starts a new reading goroutine with the reader
	// lent is the reader lent by the running quick read.
	lent atomic.Pointer[reader]
	// started is when the running quick read started, in nanoseconds
	// after epoch plus one. It is 0 when none runs, and -1 once the read
	// was handed on. Whoever moves it from a read's start has the reader:
	// end, to 0, or fire, to -1.
	started atomic.Int64
	armed   atomic.Bool
	timer   *time.Timer
}

func newQuickWatch(handOn func(*reader)) *quickWatch {
	w := &quickWatch{epoch: time.Now(), handOn: handOn}
	w.timer = time.AfterFunc(time.Hour, w.fire)
	w.timer.Stop()
	return w
}

func (w *quickWatch) now() int64 { return int64(time.Since(w.epoch)) + 1 }

// lease is a quick read's loan of the reader to the watch, for end.
type lease struct{ started int64 }

// begin lends the watch rd, the caller's reader, for a quick read that
// starts; the caller reads no frames until end.
func (w *quickWatch) begin(rd *reader) lease {
	t := w.now()
	w.lent.Store(rd)
	w.started.Store(t)
	if w.armed.CompareAndSwap(false, true) {
		w.timer.Reset(quickHandOn)
	}
	return lease{t}
}

// end notes that the quick read of l has ended, and gives back the reader
// it lent. It returns nil if the reader was handed on meanwhile: the
// caller is then no longer the reading goroutine.
func (w *quickWatch) end(l lease) *reader {
	if !w.started.CompareAndSwap(l.started, 0) {
		return nil
	}
	return w.lent.Load()
}

// fire hands the reader on if the running quick read is late, or waits
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
		w.handOn(w.lent.Load())
	}
}

// stop stops the timer, for good.
func (w *quickWatch) stop() { w.timer.Stop() }
