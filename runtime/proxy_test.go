package runtime

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

// The proxy's upstream dialer never reaches the host's own addresses,
// whatever name led there; BOXSH_PROXY_HOSTS (tests) maps names.
func TestNewProxyDial(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	p := policy.Policy{AllowedDomains: []policy.Rule{{Value: "localhost", Source: "t"}}}

	t.Setenv(ProxyHostsVar, "")
	px, err := NewProxy(p, hclog.NewNullLogger())
	require.NoError(t, err)
	_, err = px.Dial(context.Background(), "tcp", l.Addr().String())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "an address of the host itself")
	_, port, _ := net.SplitHostPort(l.Addr().String())
	_, err = px.Dial(context.Background(), "tcp", "localhost:"+port)
	assert.Error(t, err, "a name that resolves to the loopback")

	t.Setenv(ProxyHostsVar, "registry.npmjs.org="+l.Addr().String()+",example.org=127.0.0.1")
	px, err = NewProxy(p, hclog.NewNullLogger())
	require.NoError(t, err)
	c, err := px.Dial(context.Background(), "tcp", "registry.npmjs.org:443")
	require.NoError(t, err, "a name mapped to host:port")
	c.Close()
	c, err = px.Dial(context.Background(), "tcp", "example.org:"+port)
	require.NoError(t, err, "a name mapped to a host, with the port asked for")
	c.Close()

	_, err = NewProxy(policy.Policy{AllowedDomains: []policy.Rule{{Value: "*.com", Source: "t"}}}, hclog.NewNullLogger())
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "network policy: "), err.Error())
}

func TestProxyEnv(t *testing.T) {
	env := WithProxyEnv([]string{"PATH=/bin", "http_proxy=http://evil:1", "HOME=/h"})
	assert.Contains(t, env, "HTTP_PROXY=http://127.0.0.1:3128")
	assert.Contains(t, env, "https_proxy=http://127.0.0.1:3128")
	assert.Contains(t, env, "ALL_PROXY=socks5h://127.0.0.1:3128")
	assert.Contains(t, env, "NO_PROXY=localhost,127.0.0.1,::1")
	assert.NotContains(t, env, "http_proxy=http://evil:1", "the caller's proxy settings are replaced")
	assert.Contains(t, env, "PATH=/bin")
}
