package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// busy counts the calls a trimming backend says are running.
type busy struct{ n, max int }

func (b *busy) Begin() {
	b.n++
	b.max = max(b.max, b.n)
}
func (b *busy) End() { b.n-- }

// startFunc is a Backend made of its Start.
type startFunc func(context.Context, string, json.RawMessage, func(json.RawMessage, error)) error

func (f startFunc) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	return f(ctx, name, args, done)
}

// TestTrimmingCountsCalls checks that a call counts as running from before
// the backend starts it until its answer has been handed on. A call the
// backend refuses does not stay counted.
func TestTrimmingCountsCalls(t *testing.T) {
	var b busy
	var finish func(json.RawMessage, error)
	backend := trimming{startFunc(func(_ context.Context, _ string, _ json.RawMessage, done func(json.RawMessage, error)) error {
		assert.Equal(t, 1, b.n, "running while the backend starts it")
		finish = done
		return nil
	}), &b}
	assert.NoError(t, backend.Start(context.Background(), "bash", nil, func(json.RawMessage, error) {
		assert.Equal(t, 1, b.n, "running while its answer is handed on")
	}))
	assert.Equal(t, 1, b.n, "running until done")
	finish(json.RawMessage(`{}`), nil)
	assert.Equal(t, 0, b.n)

	refused := trimming{startFunc(func(context.Context, string, json.RawMessage, func(json.RawMessage, error)) error {
		return errors.New("gone")
	}), &b}
	assert.Error(t, refused.Start(context.Background(), "bash", nil, func(json.RawMessage, error) {}))
	assert.Equal(t, 0, b.n)
	assert.Equal(t, 1, b.max)
}
