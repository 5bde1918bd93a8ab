//go:build !boxsh_testseam

package host

import (
	"context"
	"net"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

// A build without the boxsh_testseam tag (every release) has no test seam:
// BOXSH_PROXY_HOSTS, which the integration tests' build uses to map names
// to loopback servers, changes nothing.
func TestNewProxyNoTestSeam(t *testing.T) {
	addr, accepted := acceptCounter(t)
	t.Setenv("BOXSH_PROXY_HOSTS", "example.invalid="+addr+",localhost="+addr)
	p := policy.Policy{AllowedDomains: []policy.Rule{{Value: "example.invalid", Source: "t"}, {Value: "localhost", Source: "t"}}}
	px, err := newProxy(p, hclog.NewNullLogger(), ProxyHooks{})
	require.NoError(t, err)
	assert.Nil(t, testDial)
	_, port, _ := net.SplitHostPort(addr)
	for _, target := range []string{"example.invalid:443", "localhost:" + port} {
		_, err = px.Dial(context.Background(), "tcp", target)
		assert.Error(t, err, target)
	}
	assert.Zero(t, accepted.Load(), "nothing reached the loopback server")
}
