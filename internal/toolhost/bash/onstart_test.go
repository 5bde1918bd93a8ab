package bash

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// OnStart reports a ticket that must wait, and calls its function when the
// call gets a worker, before its command runs; a ticket served at once is
// not reported.
func TestOnStartBeforeTheCommand(t *testing.T) {
	p := newPool(t, Options{Workers: 1, ForkServer: execMode})
	dir := t.TempDir()
	first := p.Reserve()
	assert.False(t, p.OnStart(first, func() { t.Error("the first ticket is served at once") }))
	second := p.Reserve()
	marker := filepath.Join(dir, "ran")
	var existedAtStart *bool
	require.True(t, p.OnStart(second, func() {
		_, err := os.Stat(marker)
		b := err == nil
		existedAtStart = &b
	}), "the second ticket waits")

	_, err := p.Run(context.Background(), first, tool.BashArgs{Command: "true"})
	require.NoError(t, err)
	out, err := p.Run(context.Background(), second, tool.BashArgs{Command: "touch " + marker})
	require.NoError(t, err)
	require.Equal(t, 0, out.ExitCode, out.Stderr)
	require.NotNil(t, existedAtStart, "started was called")
	assert.False(t, *existedAtStart, "started was called before the command ran")
}
