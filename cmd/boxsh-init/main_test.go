package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
)

// TestExecArgs checks the command lines of boxsh-init --exec that the
// front writes (initproto.InitOptions) and boxsh-init reads.
func TestExecArgs(t *testing.T) {
	o, err := initproto.ParseInitOptions([]string{"--exec", "--lifeline", "3", "--", "sh", "-c", "x"})
	require.NoError(t, err)
	assert.Equal(t, initproto.InitOptions{Exec: true, Lifeline: 3, Command: []string{"sh", "-c", "x"}}, o)

	o, err = initproto.ParseInitOptions([]string{"--exec", "--lifeline", "3", "--proxy-fd", "4", "--proxy-listen", "127.0.0.1:3128", "--", "curl", "x"})
	require.NoError(t, err)
	assert.Equal(t, initproto.InitOptions{Exec: true, Lifeline: 3, ProxyFD: 4, ProxyListen: "127.0.0.1:3128", Command: []string{"curl", "x"}}, o)

	for _, bad := range [][]string{{"--exec"}, {"--exec", "--"}, {"--exec", "--lifeline", "x", "true"}, {"--exec", "--lifeline", "1", "true"}, {"--exec", "--proxy-fd", "2", "true"}} {
		_, err := initproto.ParseInitOptions(bad)
		assert.Error(t, err, "%q", bad)
	}
}
