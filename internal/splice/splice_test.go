package splice

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tcpPair is two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	s := <-accepted
	require.NotNil(t, s)
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// Each direction's end of stream is passed on as a half-close: a client
// that has sent its request still reads the whole answer.
func TestConnsPassesHalfClose(t *testing.T) {
	client, a := tcpPair(t)
	b, server := tcpPair(t)
	done := make(chan struct{})
	go func() { Conns(a, b); close(done) }()

	_, err := client.Write([]byte("request"))
	require.NoError(t, err)
	require.NoError(t, client.CloseWrite())
	got, err := io.ReadAll(server)
	require.NoError(t, err)
	assert.Equal(t, "request", string(got), "the server saw the end of the request")

	_, err = server.Write([]byte("answer"))
	require.NoError(t, err)
	require.NoError(t, server.CloseWrite())
	got, err = io.ReadAll(client)
	require.NoError(t, err)
	assert.Equal(t, "answer", string(got))
	<-done
}
