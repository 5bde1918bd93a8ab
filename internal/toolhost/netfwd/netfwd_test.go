package netfwd

import (
	"bufio"
	"context"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each connection on the sandbox's side is passed to the front, which then
// serves it on a descriptor of its own.
func TestForward(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The front: an upper-casing echo server on the passed connections.
	go func() {
		done <- Forward(ctx, l, func(c *net.TCPConn) error {
			front := own(t, c)
			go func() {
				defer front.Close()
				line, _ := bufio.NewReader(front).ReadString('\n')
				_, _ = front.Write([]byte("got " + line))
			}()
			return nil
		})
	}()

	for range 3 {
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
	go func() { _ = Forward(ctx, l, func(*net.TCPConn) error { return errors.New("gone") }) }()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Read(make([]byte, 1))
	assert.Error(t, err)
}
