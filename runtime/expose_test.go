package runtime

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/netfwd"
	"github.com/boxsh/boxsh/runtime/host"
)

// The front's side of the forwarding socket accepts no stream from
// boxsh-init: a stream it opens is closed at once, so that nothing in the
// sandbox can make the front connect anywhere.
func TestForwardSessionRefusesStreams(t *testing.T) {
	front, back, err := host.SocketPair()
	require.NoError(t, err)
	s, err := forwardSession(front)
	require.NoError(t, err)
	defer s.Close()
	c, err := net.FileConn(back)
	back.Close()
	require.NoError(t, err)
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	init, err := yamux.Server(c, cfg)
	require.NoError(t, err)
	defer init.Close()
	st, err := init.Open()
	require.NoError(t, err)
	_, _ = st.Write([]byte{0, 80, 'G', 'E', 'T'})
	require.NoError(t, st.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, err := st.Read(make([]byte, 16))
	assert.Zero(t, n)
	assert.ErrorIs(t, err, io.EOF, "the front closed the stream")
}

// NewPorts (shell mode's exposed ports) carries each connection to the
// host's port as a stream of the forwarding socket, which boxsh-init's
// side connects to the port it names; Close stops listening.
func TestNewPortsForwards(t *testing.T) {
	front, back, err := host.SocketPair()
	require.NoError(t, err)
	p, err := NewPorts(front, nil)
	require.NoError(t, err)
	defer p.Close()
	c, err := net.FileConn(back)
	back.Close()
	require.NoError(t, err)
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	init, err := yamux.Server(c, cfg)
	require.NoError(t, err)
	defer init.Close()
	go func() {
		_ = netfwd.ServeInbound(context.Background(), func() (net.Conn, error) { return init.Accept() })
	}()

	target, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer target.Close()
	go func() {
		c, err := target.Accept()
		if err == nil {
			_, _ = c.Write([]byte("from the sandbox"))
			c.Close()
		}
	}()
	port := target.Addr().(*net.TCPAddr).Port
	info, err := p.Expose(port, 0)
	require.NoError(t, err)
	assert.Equal(t, port, info.Port)
	assert.Equal(t, []tool.PortInfo{info}, p.List())
	conn, err := net.Dial("tcp", info.Address)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	got, err := io.ReadAll(conn)
	conn.Close()
	require.NoError(t, err)
	assert.Equal(t, "from the sandbox", string(got))

	p.Close()
	_, err = net.DialTimeout("tcp", info.Address, time.Second)
	assert.Error(t, err, "closed")
	_, err = p.Expose(port, 0)
	assert.ErrorContains(t, err, "stopping")
}
