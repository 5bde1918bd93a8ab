package netfwd

import (
	"bufio"
	"context"
	"net"
	"testing"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A connection on the sandbox's side reaches the front's side through a
// yamux stream, both ways, with half-closes.
func TestForwardOverYamux(t *testing.T) {
	inner, outer := net.Pipe()
	client, err := yamux.Client(inner, nil)
	require.NoError(t, err)
	server, err := yamux.Server(outer, nil)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close(); server.Close() })

	// The front: an upper-casing echo server on the session's streams.
	go func() {
		for {
			s, err := server.Accept()
			if err != nil {
				return
			}
			go func() {
				defer s.Close()
				line, _ := bufio.NewReader(s).ReadString('\n')
				_, _ = s.Write([]byte("got " + line))
			}()
		}
	}()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, l, func() (net.Conn, error) { return client.Open() }) }()

	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		require.NoError(t, err)
		_, err = c.Write([]byte("hello\n"))
		require.NoError(t, err)
		reply, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "got hello\n", reply)
		c.Close()
	}

	cancel()
	require.NoError(t, <-done, "Forward returns nil when ctx ends")
	_, err = net.Dial("tcp", l.Addr().String())
	assert.Error(t, err, "the listener is closed")
}

// When the front is gone, a client's connection is closed at once.
func TestForwardWithoutFront(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = Forward(ctx, l, func() (net.Conn, error) { return nil, net.ErrClosed }) }()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Read(make([]byte, 1))
	assert.Error(t, err)
}
