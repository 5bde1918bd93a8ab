//go:build boxsh_testseam

package host

import (
	"context"
	"net"
	"os"
	"strings"
	"time"
)

// This file is compiled only with the boxsh_testseam build tag, which the
// integration tests use for the front they start for the network tests
// (integration/network_test.go); `just build` and releases never set it.

// proxyHostsVar names the variable that maps host names to addresses for the
// proxy's upstream connections: "name=host:port,..." or "name=host,...".
//
// The integration tests' stand-ins for the outside world listen on the
// loopback, which the real dialer refuses.
const proxyHostsVar = "BOXSH_PROXY_HOSTS"

// askTimeoutVar names the variable that bounds the questions about
// destinations on no list (a Go duration), in place of
// proxy.DefaultAskTimeout, so that a test of an unanswered question is short.
const askTimeoutVar = "BOXSH_ASK_TIMEOUT"

func init() {
	if d, err := time.ParseDuration(os.Getenv(askTimeoutVar)); err == nil && d > 0 {
		testAskTimeout = d
	}
	if hosts := os.Getenv(proxyHostsVar); hosts != "" {
		testDial = func(outside dialFunc) dialFunc { return mapHosts(hosts, outside) }
	}
}

// mapHosts is a dialer that connects the names of hosts (proxyHostsVar's
// syntax) to their addresses, unchecked, and anything else through outside.
func mapHosts(hosts string, outside dialFunc) dialFunc {
	m := map[string]string{}
	for entry := range strings.SplitSeq(hosts, ",") {
		if name, addr, ok := strings.Cut(entry, "="); ok {
			m[name] = addr
		}
	}
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := m[addr]; ok {
			return d.DialContext(ctx, network, to)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return outside(ctx, network, addr)
		}
		to, ok := m[host]
		if !ok {
			return outside(ctx, network, addr)
		}
		if _, _, err := net.SplitHostPort(to); err != nil {
			to = net.JoinHostPort(to, port) // a name mapped to a host
		}
		return d.DialContext(ctx, network, to)
	}
}
