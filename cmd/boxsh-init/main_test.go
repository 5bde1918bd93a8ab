package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecArgs(t *testing.T) {
	o, cmd, err := execArgs([]string{"--lifeline", "3", "--", "sh", "-c", "x"})
	require.NoError(t, err)
	assert.Equal(t, execOptions{lifeline: 3}, o)
	assert.Equal(t, []string{"sh", "-c", "x"}, cmd)

	o, cmd, err = execArgs([]string{"--lifeline", "3", "--proxy-fd", "4", "--proxy-listen", "127.0.0.1:3128", "--", "curl", "x"})
	require.NoError(t, err)
	assert.Equal(t, execOptions{lifeline: 3, proxyFD: 4, proxyListen: "127.0.0.1:3128"}, o)
	assert.Equal(t, []string{"curl", "x"}, cmd)

	o, cmd, err = execArgs([]string{"true"})
	require.NoError(t, err)
	assert.Zero(t, o)
	assert.Equal(t, []string{"true"}, cmd)

	for _, bad := range [][]string{{}, {"--"}, {"--lifeline", "x", "true"}, {"--lifeline", "1", "true"}, {"--proxy-fd", "2", "true"}} {
		_, _, err := execArgs(bad)
		assert.Error(t, err, "%q", bad)
	}
}
