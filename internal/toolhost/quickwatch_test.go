package toolhost

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestQuickWatch checks the watch of quick reads:
//   - quick reads are not handed on and get their reader back;
//   - a late one is handed on, once, with the reader it lent;
//   - reads after it are watched as before.
//
// It runs in a synctest bubble: a read is quick or late by the bubble's
// clock, which stands still while the test runs.
func TestQuickWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		handed := make(chan *reader, 4)
		w := newQuickWatch(func(rd *reader) { handed <- rd })
		defer w.stop()
		rd := &reader{}
		for range 1000 {
			assert.Same(t, rd, w.end(w.begin(rd)))
		}
		time.Sleep(3 * quickHandOn)
		assert.Empty(t, handed, "quick reads are not handed on")

		l := w.begin(rd)
		select {
		case got := <-handed:
			assert.Same(t, rd, got, "the late read's reader is handed on")
		case <-time.After(10 * time.Second):
			t.Fatal("a late read was not handed on")
		}
		assert.Nil(t, w.end(l), "the late read's goroutine learns it was handed on")

		// The goroutine the reader was handed to reads on, with quick reads
		// of its own.
		l = w.begin(rd)
		assert.Same(t, rd, w.end(l))
		time.Sleep(3 * quickHandOn)
		assert.Empty(t, handed, "one hand-on for one late read")
		l = w.begin(rd)
		select {
		case got := <-handed:
			assert.Same(t, rd, got)
		case <-time.After(10 * time.Second):
			t.Fatal("a late read after a hand-on was not handed on")
		}
		assert.Nil(t, w.end(l))
	})
}
