package host

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/boxsh/boxsh/policy"
)

// acceptCounter listens on the loopback and counts the connections it
// accepts (closing each at once).
func acceptCounter(t *testing.T) (addr string, accepted *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	accepted = new(atomic.Int32)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return l.Addr().String(), accepted
}

// The proxy's upstream dialer never reaches the host's own addresses,
// whatever name led there.
func TestNewProxyDial(t *testing.T) {
	addr, accepted := acceptCounter(t)
	p := policy.Policy{AllowedDomains: []policy.Rule{{Value: "localhost", Source: "t"}}}
	px, err := newProxy(p, hclog.NewNullLogger(), ProxyHooks{})
	require.NoError(t, err)
	_, err = px.Dial(context.Background(), "tcp", addr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "an address of the host itself")
	_, port, _ := net.SplitHostPort(addr)
	_, err = px.Dial(context.Background(), "tcp", "localhost:"+port)
	assert.Error(t, err, "a name that resolves to the loopback")
	assert.Zero(t, accepted.Load())

	_, err = newProxy(policy.Policy{AllowedDomains: []policy.Rule{{Value: "*.com", Source: "t"}}}, hclog.NewNullLogger(), ProxyHooks{})
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "network policy: "), err.Error())
}

// ownAddrs are the addresses of this host's interfaces other than the
// loopback and link-local ones: those the checks by class do not cover.
func ownAddrs(t *testing.T) []netip.Addr {
	t.Helper()
	set, err := hostAddrs()
	require.NoError(t, err)
	var own []netip.Addr
	for a := range set {
		if !isSpecialAddr(a) {
			own = append(own, a)
		}
	}
	return own
}

func TestRefuseHostLocal(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "169.254.169.254", "fe80::1%lo",
		"0.0.0.0", "0.1.2.3", "::", "224.0.0.1", "239.1.1.1", "ff02::1", "255.255.255.255",
	}
	for _, a := range ownAddrs(t) {
		refused = append(refused, a.String())
		if a.Is4() {
			refused = append(refused, "::ffff:"+a.String())
		}
	}
	for _, ip := range refused {
		err := refuseHostLocal("tcp", net.JoinHostPort(ip, "80"), nil)
		if assert.Error(t, err, ip) {
			assert.Contains(t, err.Error(), "an address of the host itself", ip)
		}
	}
	for _, ip := range []string{"93.184.216.34", "2606:4700::1111", "10.1.2.3"} {
		assert.NoError(t, refuseHostLocal("tcp", net.JoinHostPort(ip, "443"), nil), ip)
	}
	assert.Error(t, refuseHostLocal("tcp", "no-port", nil))
	assert.Error(t, refuseHostLocal("tcp", "example.org:80", nil), "only addresses reach Control")
}

// fakeResolver is a resolver whose DNS server answers every A and AAAA
// question with addrs (of the matching family).
func fakeResolver(addrs ...netip.Addr) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		client, server := net.Pipe()
		go serveFakeDNS(server, addrs)
		return client, nil
	}}
}

// serveFakeDNS answers DNS queries on c (TCP framing: net.Pipe is not a
// packet connection) until it closes.
func serveFakeDNS(c net.Conn, addrs []netip.Addr) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		var msg dnsmessage.Message
		if err := msg.Unpack(q); err != nil || len(msg.Questions) != 1 {
			return
		}
		question := msg.Questions[0]
		msg.Header.Response, msg.Header.Authoritative = true, true
		msg.Answers = nil
		for _, a := range addrs {
			h := dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: 60}
			switch {
			case a.Is4() && question.Type == dnsmessage.TypeA:
				h.Type = dnsmessage.TypeA
				msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AResource{A: a.As4()}})
			case a.Is6() && question.Type == dnsmessage.TypeAAAA:
				h.Type = dnsmessage.TypeAAAA
				msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AAAAResource{AAAA: a.As16()}})
			}
		}
		out, err := msg.Pack()
		if err != nil {
			return
		}
		binary.BigEndian.PutUint16(n[:], uint16(len(out)))
		if _, err := c.Write(append(n[:], out...)); err != nil {
			return
		}
	}
}

// A name that resolves to one of the host's own interface addresses is
// refused at dial time: the check reads the interfaces then, so an address
// added after the proxy started is covered too.
func TestOutsideDialerOwnAddresses(t *testing.T) {
	ctx := context.Background()
	for _, a := range ownAddrs(t) {
		_, err := outsideDialer(fakeResolver(a)).DialContext(ctx, "tcp", "mirror.example.com:8080")
		if assert.Error(t, err, a) {
			assert.Contains(t, err.Error(), "one of its interfaces", a)
		}
	}

	// An address the host gains while the proxy runs (the list is read at
	// each dial): stand in for it through hostAddrs.
	planted := netip.MustParseAddr("203.0.113.7")
	d := outsideDialer(fakeResolver(planted))
	real := hostAddrs
	t.Cleanup(func() { hostAddrs = real })
	hostAddrs = func() (map[netip.Addr]bool, error) {
		m, err := real()
		if m != nil {
			m[planted] = true
		}
		return m, err
	}
	_, err := d.DialContext(ctx, "tcp", "planted.example.com:80")
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "refusing to connect to 203.0.113.7")
	}
	hostAddrs = func() (map[netip.Addr]bool, error) { return nil, errors.New("netlink: no") }
	_, err = d.DialContext(ctx, "tcp", "planted.example.com:80")
	if assert.Error(t, err, "fails closed") {
		assert.Contains(t, err.Error(), "cannot list the host's addresses")
	}

	// Every address a name resolves to is checked, not only the first.
	addr, accepted := acceptCounter(t)
	_, port, _ := net.SplitHostPort(addr)
	_, err = outsideDialer(fakeResolver(netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.1"))).
		DialContext(ctx, "tcp", "mixed.example.com:"+port)
	assert.Error(t, err)
	assert.Zero(t, accepted.Load())
}
