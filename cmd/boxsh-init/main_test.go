package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecArgs(t *testing.T) {
	fd, cmd, err := execArgs([]string{"--lifeline", "3", "--", "sh", "-c", "x"})
	require.NoError(t, err)
	assert.Equal(t, 3, fd)
	assert.Equal(t, []string{"sh", "-c", "x"}, cmd)

	fd, cmd, err = execArgs([]string{"true"})
	require.NoError(t, err)
	assert.Zero(t, fd)
	assert.Equal(t, []string{"true"}, cmd)

	for _, bad := range [][]string{{}, {"--"}, {"--lifeline", "x", "true"}, {"--lifeline", "1", "true"}} {
		_, _, err := execArgs(bad)
		assert.Error(t, err, "%q", bad)
	}
}
