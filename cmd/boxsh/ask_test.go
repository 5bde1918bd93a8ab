package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/rpc"
)

// --network-ask goes with --rpc on stdio, and means the allowlist.
func TestParseArgsNetworkAsk(t *testing.T) {
	o, err := parseArgs([]string{"--rpc", "--network-ask"}, "/")
	require.NoError(t, err)
	assert.True(t, o.networkAsk)
	assert.True(t, o.sandbox.Enabled)
	var mode string
	for _, fs := range o.flagSettings {
		if fs.settings.Network.Mode != "" {
			mode = fs.settings.Network.Mode
		}
	}
	assert.Equal(t, policy.NetworkAllowlist, mode)
	_, err = parseArgs([]string{"--rpc", "--network-ask", "--network", "allowlist", "--allow-domain", "a.example"}, "/")
	require.NoError(t, err)

	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"--network-ask", "-c", "true"}, "goes with --rpc on stdio"},
		{[]string{"--rpc", "--listen", "--network-ask"}, "goes with --rpc on stdio"},
		{[]string{"--rpc", "--network-ask", "--network", "disabled"}, "needs --network allowlist"},
	} {
		_, err := parseArgs(c.argv, "/")
		require.ErrorIs(t, err, policy.ErrUsage, "%q", c.argv)
		assert.Contains(t, err.Error(), c.want, "%q", c.argv)
	}
}

// A client that cannot be asked gets no question: the answer is NoAnswer.
func TestAskClientUnbound(t *testing.T) {
	ask := askClient(&rpc.Elicitor{}, nil)
	assert.Equal(t, proxy.NoAnswer, ask(context.Background(), "a.example", 443))
}
