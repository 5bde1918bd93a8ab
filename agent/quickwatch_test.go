package agent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestQuickWatch checks that quick reads are not handed on, that a late
// one is, once, and that reads after it are watched as before.
func TestQuickWatch(t *testing.T) {
	handed := make(chan struct{}, 4)
	w := newQuickWatch(func() { handed <- struct{}{} })
	defer w.stop()
	for range 1000 {
		assert.False(t, w.end(w.begin()))
	}
	time.Sleep(3 * quickHandOn)
	assert.Empty(t, handed, "quick reads are not handed on")

	token := w.begin()
	select {
	case <-handed:
	case <-time.After(10 * time.Second):
		t.Fatal("a late read was not handed on")
	}
	assert.True(t, w.end(token), "the late read's goroutine learns it was handed on")

	token = w.begin()
	assert.False(t, w.end(token))
	time.Sleep(3 * quickHandOn)
	assert.Empty(t, handed, "one hand-on for one late read")
	token = w.begin()
	select {
	case <-handed:
	case <-time.After(10 * time.Second):
		t.Fatal("a late read after a hand-on was not handed on")
	}
	assert.True(t, w.end(token))
}
