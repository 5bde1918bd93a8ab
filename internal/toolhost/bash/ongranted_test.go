package bash

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// OnGranted reports a ticket that must wait, and calls its function once
// the ticket has its worker (the call then runs without waiting); a ticket
// served at once, or given up, never has it called.
func TestOnGranted(t *testing.T) {
	p := newPool(t, Options{Workers: 1, ForkServer: execMode})
	first := p.Reserve()
	assert.False(t, p.OnGranted(first, func() { t.Error("the first ticket is served at once") }))
	second, third := p.Reserve(), p.Reserve()
	granted := make(chan *Ticket, 2)
	require.True(t, p.OnGranted(second, func() { granted <- second }))
	require.True(t, p.OnGranted(third, func() { t.Error("a ticket given up got a worker") }))
	p.Abandon(third)

	_, err := p.Run(context.Background(), first, tool.BashArgs{Command: "true"})
	require.NoError(t, err)
	require.Len(t, granted, 1, "granted once the first call released its worker")
	_, err = p.Run(context.Background(), <-granted, tool.BashArgs{Command: "true"})
	require.NoError(t, err)
}

// The pool keeps no ticket it has served from its queue: what the call's
// functions hold (its state, its context) is freed with the call, not
// kept until the queue grows again.
func TestServedTicketNotKept(t *testing.T) {
	p := newPool(t, Options{Workers: 1, ForkServer: execMode})
	first, second := p.Reserve(), p.Reserve()
	freed := make(chan struct{})
	state := new([64]byte)
	runtime.AddCleanup(state, func(ch chan struct{}) { close(ch) }, freed)
	require.True(t, p.OnGranted(second, func() { state[0]++ }))
	_, err := p.Run(context.Background(), first, tool.BashArgs{Command: "true"})
	require.NoError(t, err)
	_, err = p.Run(context.Background(), second, tool.BashArgs{Command: "true"})
	require.NoError(t, err)
	for range 50 {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("the state of a served ticket's function is still kept")
}
