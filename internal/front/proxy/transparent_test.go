package proxy

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// captured asks p for name:port as boxsh-init does for a captured
// connection, and returns the connection and the reply code.
func captured(t *testing.T, p *testProxy, name string, port uint16, methods ...byte) (net.Conn, byte) {
	t.Helper()
	c, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	req := append([]byte{socks5Version, byte(len(methods))}, methods...)
	req = append(req, socks5Version, socksConnect, 0, socksDomain, byte(len(name)))
	req = binary.BigEndian.AppendUint16(append(req, name...), port)
	_, err = c.Write(req)
	require.NoError(t, err)
	var b [10]byte
	_, err = io.ReadFull(c, b[:2])
	require.NoError(t, err)
	require.Equal(t, byte(socksCaptured), b[1], "the captured method is chosen")
	_, err = io.ReadFull(c, b[:])
	require.NoError(t, err)
	return c, b[1]
}

// A captured connection is decided as a CONNECT is, on the name and port
// it names, and recorded as "transparent".
func TestCapturedConnection(t *testing.T) {
	echo := startEcho(t)
	w := world{"echo.example.com:22": echo}
	var mu sync.Mutex
	var got []Decision
	p := startProxy(t, &Server{Dial: w.dial, Decided: func(d Decision) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, d)
	}}, []string{"echo.example.com:22"}, nil)

	c, code := captured(t, p, "Echo.Example.COM.", 22, socksNoAuth, socksCaptured)
	require.Equal(t, byte(socksSucceeded), code)
	echoes(t, c, "ssh-ish")

	_, code = captured(t, p, "echo.example.com", 443, socksCaptured)
	assert.Equal(t, byte(socksNotAllowed), code, "another port")
	_, code = captured(t, p, "evil.example.org", 22, socksCaptured)
	assert.Equal(t, byte(socksNotAllowed), code, "another name")
	_, code = captured(t, p, "127.0.0.1", 22, socksCaptured)
	assert.Equal(t, byte(socksNotAllowed), code, "an address")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 4)
	assert.Equal(t, Decision{Host: "echo.example.com", Port: 22, Protocol: "transparent", Allowed: true, Rule: "echo.example.com:22"}, got[0])
	for _, d := range got[1:] {
		assert.Equal(t, "transparent", d.Protocol)
		assert.False(t, d.Allowed, "%+v", d)
	}
}

func TestSOCKSMethod(t *testing.T) {
	for _, tc := range []struct {
		methods  []byte
		method   byte
		protocol string
	}{
		{[]byte{socksNoAuth}, socksNoAuth, "socks5"},
		{[]byte{socksNoAuth, socksCaptured}, socksCaptured, "transparent"},
		{[]byte{0x02, socksCaptured}, socksCaptured, "transparent"},
		{[]byte{0x02}, socksNoAcceptable, ""},
		{nil, socksNoAcceptable, ""},
	} {
		m, p := socksMethod(tc.methods)
		assert.Equal(t, tc.method, m, "%v", tc.methods)
		assert.Equal(t, tc.protocol, p, "%v", tc.methods)
	}
}
