//go:build boxsh_testseam

package host

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test seam maps names to loopback servers; other names still go
// through the checked dialer.
func TestMapHosts(t *testing.T) {
	addr, accepted := acceptCounter(t)
	_, port, _ := net.SplitHostPort(addr)
	dial := mapHosts("registry.npmjs.org="+addr+",example.org=127.0.0.1", outsideDialer(net.DefaultResolver).DialContext)
	c, err := dial(context.Background(), "tcp", "registry.npmjs.org:443")
	require.NoError(t, err, "a name mapped to host:port")
	c.Close()
	c, err = dial(context.Background(), "tcp", "example.org:"+port)
	require.NoError(t, err, "a name mapped to a host, with the port asked for")
	c.Close()
	_, err = dial(context.Background(), "tcp", "localhost:"+port)
	assert.Error(t, err, "a name not mapped goes through the checked dialer")
	assert.Eventually(t, func() bool { return accepted.Load() == 2 }, time.Second, 10*time.Millisecond)
}
