package host

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/policy"
)

// An answer of AllowSandbox adds the destination to the Network's allowed
// domains; the other answers leave the lists alone.
func TestAskerAllowSandboxAddsTheDestination(t *testing.T) {
	p := policy.Policy{AllowedDomains: []policy.Rule{{Value: "a.example", Source: "--allow-domain"}}}
	n, err := NewNetwork(p)
	require.NoError(t, err)
	answer := proxy.AllowOnce
	px, err := newProxy(policy.Policy{}, hclog.NewNullLogger(), ProxyHooks{Network: n,
		Ask: func(context.Context, string, int) proxy.Answer { return answer }})
	require.NoError(t, err)
	require.NotNil(t, px.Ask)

	assert.Equal(t, proxy.AllowOnce, px.Ask(context.Background(), "b.example", 443))
	allowed, _ := n.Lists()
	assert.Len(t, allowed, 1)

	answer = proxy.AllowSandbox
	assert.Equal(t, proxy.AllowSandbox, px.Ask(context.Background(), "b.example", 443))
	allowed, _ = n.Lists()
	assert.Equal(t, []policy.Rule{p.AllowedDomains[0], {Value: "b.example:443", Source: AskedSource}}, allowed)
	ok, _ := n.live.Rules().Decide("b.example", 443)
	assert.True(t, ok)
	ok, _ = n.live.Rules().Decide("b.example", 80)
	assert.False(t, ok, "only the port asked about")
}

// Without a Network, nothing is asked: AllowSandbox could not be kept.
func TestAskerNeedsNetwork(t *testing.T) {
	px, err := newProxy(policy.Policy{}, hclog.NewNullLogger(), ProxyHooks{
		Ask: func(context.Context, string, int) proxy.Answer { return proxy.AllowOnce }})
	require.NoError(t, err)
	assert.Nil(t, px.Ask)
}
