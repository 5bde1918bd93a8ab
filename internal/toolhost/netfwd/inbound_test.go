package netfwd

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
)

// A stream is connected to the loopback port its header names, and copied
// both ways; a stream with a bad header is closed.
func TestServeInbound(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		_, _ = c.Write([]byte("echo:" + line))
	}()
	streams := make(chan net.Conn, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- ServeInbound(ctx, func() (net.Conn, error) {
			select {
			case c := <-streams:
				return c, nil
			case <-ctx.Done():
				return nil, net.ErrClosed
			}
		})
	}()

	front, init := net.Pipe()
	streams <- init
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, front.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = front.Write(append(initproto.ForwardHeader(port), "hello\n"...))
	require.NoError(t, err)
	line, err := bufio.NewReader(front).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "echo:hello\n", line)
	front.Close()

	bad, badInit := net.Pipe()
	streams <- badInit
	require.NoError(t, bad.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = bad.Write([]byte{0, 0})
	require.NoError(t, err)
	_, err = bad.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "port 0 refused")
	cancel()
	require.NoError(t, <-done)
}
