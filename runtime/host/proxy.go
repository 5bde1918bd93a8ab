package host

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/policy"
)

// ProxyHooks observe the network proxy of a sandbox from the front.
type ProxyHooks struct {
	// Decided is told each decision (the audit log records them).
	Decided func(proxy.Decision)
	// Traffic counts the bytes between the sandbox and the proxy.
	Traffic *Traffic
	// Network, when set, is the network policy in force, which may change
	// while the proxy serves; the policy's own lists are then not read.
	Network *Network
	// Ask, when set with Network, is asked about a destination on no list
	// (see proxy.Server.Ask). An answer of AllowSandbox adds host:port to
	// Network's allowed domains before the request goes on.
	Ask func(ctx context.Context, host string, port int) proxy.Answer
	// Secrets, when set, are put in requests in place of their stand-ins
	// (see PrepareSecrets).
	Secrets *proxy.Secrets
	// Requests, when set, decide requests by method and path.
	Requests *proxy.RequestRules
}

// AskedSource is the source of a domain allowed by an answer to a
// question (see ProxyHooks.Ask).
const AskedSource policy.Source = "answer of the MCP client"

// Traffic counts the bytes between a sandbox and the front's proxy (see
// proxy.Traffic).
type Traffic = proxy.Traffic

// newProxy is the network proxy of policy p, logging its decisions to
// log and telling them to hooks.Decided.
func newProxy(p policy.Policy, log hclog.Logger, hooks ProxyHooks) (*proxy.Server, error) {
	s := &proxy.Server{Log: log, Decided: hooks.Decided, Secrets: hooks.Secrets, Requests: hooks.Requests, Traffic: hooks.Traffic}
	if n := hooks.Network; n != nil {
		s.Live, s.RuleSource = n.live, n.source
		if hooks.Ask != nil {
			s.Ask, s.AskTimeout = n.asker(hooks.Ask, log), testAskTimeout
		}
	} else {
		rules, err := proxy.NewRules(policy.Values(p.AllowedDomains), policy.Values(p.DeniedDomains))
		if err != nil {
			return nil, fmt.Errorf("network policy: %w", err)
		}
		s.Rules, s.RuleSource = rules, ruleSource(p.DeniedDomains)
	}
	s.Dial = outsideDialer(net.DefaultResolver).DialContext
	if testDial != nil {
		s.Dial = testDial(s.Dial)
	}
	return s, nil
}

// asker is a proxy.Server.Ask that asks ask, and adds the destination to
// n's allowed domains when the answer is AllowSandbox (a failure to add it
// makes the answer AllowOnce).
func (n *Network) asker(ask func(context.Context, string, int) proxy.Answer, log hclog.Logger) func(context.Context, string, int) proxy.Answer {
	return func(ctx context.Context, host string, port int) proxy.Answer {
		a := ask(ctx, host, port)
		if a != proxy.AllowSandbox {
			return a
		}
		pattern := net.JoinHostPort(host, strconv.Itoa(port))
		_, err := n.Update(func(allowed, denied []policy.Rule) ([]policy.Rule, []policy.Rule, error) {
			return append(allowed, policy.Rule{Value: pattern, Source: AskedSource}), denied, nil
		})
		if err != nil {
			log.Warn("cannot allow the destination for the sandbox; allowed once", "host", host, "port", port, "error", err)
			return proxy.AllowOnce
		}
		return a
	}
}

// testAskTimeout, when set, bounds the questions of ProxyHooks.Ask in
// place of proxy.DefaultAskTimeout. Only a build with the boxsh_testseam
// tag sets it (proxy_seam.go).
var testAskTimeout time.Duration

// ruleSource names the source of each of the denied rules, for the
// explanation of a refusal by one.
func ruleSource(denied []policy.Rule) func(string) string {
	return func(rule string) string {
		for _, r := range denied {
			if r.Value == rule {
				return string(r.Source)
			}
		}
		return ""
	}
}

// testDial, when set, wraps the proxy's upstream dialer. Only a build with
// the boxsh_testseam tag sets it (proxy_seam.go), for the integration tests'
// stand-ins of the outside world on the loopback; a released build has no
// way to change where the proxy connects.
var testDial func(outside dialFunc) dialFunc

// dialFunc connects to addr ("host:port") on network.
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// outsideDialer is the proxy's upstream dialer: names resolve through r, and
// every address it then tries is checked by refuseHostLocal first.
func outsideDialer(r *net.Resolver) *net.Dialer {
	return &net.Dialer{Timeout: 10 * time.Second, Resolver: r, Control: refuseHostLocal}
}

// ListenProxy starts the network proxy of policy p on a TCP port of 127.0.0.1
// that the system picks.
//
// It is for a sandbox that reaches the proxy on the host's loopback: macOS,
// where a sandbox has no network namespace of its own and its profile lets it
// connect to that port only. It returns the address ("127.0.0.1:PORT") and the
// function that stops the proxy.
func ListenProxy(p policy.Policy, log hclog.Logger, hooks ProxyHooks) (addr string, stop func(), err error) {
	px, err := newProxy(p, log, hooks)
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("proxy: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = px.Serve(ctx, l); close(done) }()
	return l.Addr().String(), func() { cancel(); l.Close(); <-done }, nil
}

// refuseHostLocal refuses upstream connections to the host itself.
//
// It refuses:
//
//   - the host's loopback;
//   - the addresses of any of its interfaces, IPv4 and IPv6, read at each
//     connection so that an address added since is covered;
//   - link-local addresses, such as a cloud's metadata service;
//   - unspecified, broadcast and multicast addresses.
//
// The proxy runs outside the sandbox. An allowed name that resolves to one of
// these must not reach the host's own services; one listening on 0.0.0.0
// answers on every interface address. refuseHostLocal runs as the dialer's
// Control, on the address the socket is about to connect to, after any name
// resolution.
func refuseHostLocal(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	ip = ip.Unmap().WithZone("")
	if isSpecialAddr(ip) {
		return fmt.Errorf("refusing to connect to %s: an address of the host itself", ip)
	}
	own, err := hostAddrs()
	if err != nil {
		return fmt.Errorf("refusing to connect to %s: cannot list the host's addresses: %w", ip, err)
	}
	if own[ip] {
		return fmt.Errorf("refusing to connect to %s: an address of the host itself (one of its interfaces)", ip)
	}
	return nil
}

// isSpecialAddr reports whether ip (unmapped, without zone) is a loopback,
// link-local, unspecified ("this network", 0.0.0.0/8), broadcast or
// multicast address: never a server of the outside world.
func isSpecialAddr(ip netip.Addr) bool {
	if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() {
		return true
	}
	if ip.Is4() {
		b := ip.As4()
		return b[0] == 0 || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255})
	}
	return false
}

// hostAddrs is the set of the addresses of the host's network interfaces
// (unmapped, without zone), read now. A variable for tests.
var hostAddrs = func() (map[netip.Addr]bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	own := make(map[netip.Addr]bool, len(addrs))
	for _, a := range addrs {
		var ip net.IP
		switch a := a.(type) {
		case *net.IPNet:
			ip = a.IP
		case *net.IPAddr:
			ip = a.IP
		}
		if addr, ok := netip.AddrFromSlice(ip); ok {
			own[addr.Unmap()] = true
		}
	}
	return own, nil
}
