package host

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

// A proxy of a Network decides by the lists in force, and an invalid list
// changes nothing.
func TestNetworkSet(t *testing.T) {
	p := policy.Policy{AllowedDomains: []policy.Rule{{Value: "a.example", Source: "--allow-domain"}}}
	n, err := NewNetwork(p)
	require.NoError(t, err)
	px, err := newProxy(policy.Policy{}, hclog.NewNullLogger(), ProxyHooks{Network: n})
	require.NoError(t, err)
	require.Same(t, n.live, px.Live)

	ok, _ := n.live.Rules().Decide("b.example", 443)
	assert.False(t, ok)
	allowed := []policy.Rule{{Value: "a.example", Source: "--allow-domain"}, {Value: "b.example", Source: "rest 127.0.0.1"}}
	denied := []policy.Rule{{Value: "c.a.example", Source: "rest 127.0.0.1"}}
	_, err = n.Set(allowed, denied)
	require.NoError(t, err)
	ok, rule := n.live.Rules().Decide("b.example", 443)
	assert.True(t, ok)
	assert.Equal(t, "b.example", rule)
	assert.Equal(t, "rest 127.0.0.1", px.RuleSource("c.a.example"))

	_, err = n.Set([]policy.Rule{{Value: "*.com", Source: "x"}}, nil)
	require.ErrorContains(t, err, `allowed domain "*.com"`)
	a, d := n.Lists()
	assert.Equal(t, allowed, a, "unchanged")
	assert.Equal(t, denied, d)
}
