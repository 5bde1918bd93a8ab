package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sandboxes write in the sessions' directory and beside it, in the
// empty directories' (the snapshots are the server's copies).
func TestWritableDirs(t *testing.T) {
	dirs, err := Config{SessionDir: "/state/sessions"}.WritableDirs()
	require.NoError(t, err)
	assert.Equal(t, []string{"/state/sessions", "/state/sandboxes"}, dirs)
	dirs, err = Config{SessionDir: "/state/sessions", EmptyDir: "/elsewhere"}.WritableDirs()
	require.NoError(t, err)
	assert.Equal(t, []string{"/state/sessions", "/elsewhere"}, dirs)
}

// Warm sandboxes of each kind run beside the most a server hosts.
func TestMaxRunning(t *testing.T) {
	assert.Equal(t, 10, MaxRunning(10, 0))
	assert.Equal(t, 16, MaxRunning(10, 3), "3 of each kind: from workspace and empty")
}
