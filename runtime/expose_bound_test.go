package runtime

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// greeter listens on loopback and writes hello on each connection, then
// holds it open until its client has closed; dial connects to it,
// whatever the port asked.
func greeter(t *testing.T) func(int) (net.Conn, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte("hello"))
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return func(int) (net.Conn, error) { return net.Dial("tcp", l.Addr().String()) }
}

// A sandbox with a bound on forwards is refused the one past it, with the
// limit and the flag that sets it named; an unexposed port makes room.
func TestPortsForwardLimit(t *testing.T) {
	p := &Ports{dial: greeter(t), log: hclog.NewNullLogger()}
	p.bound(2)
	defer p.Close()
	_, err := p.Expose(1001, 0)
	require.NoError(t, err)
	_, err = p.Expose(1002, 0)
	require.NoError(t, err)
	_, err = p.Expose(1003, 0)
	require.ErrorIs(t, err, ErrForwardLimit)
	assert.EqualError(t, err, "port 1003: too many exposed ports: 2 ports are exposed, the sandbox's limit (set by --sandbox-forwards 2); unexpose one first")
	assert.Len(t, p.List(), 2)
	_, err = p.Unexpose(1001)
	require.NoError(t, err)
	_, err = p.Expose(1003, 0)
	require.NoError(t, err, "room made by unexpose")

	unbounded := &Ports{dial: greeter(t), log: hclog.NewNullLogger()}
	defer unbounded.Close()
	for port := range 40 {
		_, err := unbounded.Expose(2000+port, 0)
		require.NoError(t, err, "no bound: port %d", port)
	}
}

// read reads hello from c within d, or reports what it got.
func read(c net.Conn, d time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	b := make([]byte, 5)
	n, err := io.ReadFull(c, b)
	return string(b[:n]), err
}

// With a bound, the connections open at once to a sandbox's ports are
// bounded too: the one past it waits, unserved, until one ends.
func TestPortsConnLimit(t *testing.T) {
	p := &Ports{dial: greeter(t), log: hclog.NewNullLogger()}
	p.bound(1)
	defer p.Close()
	info, err := p.Expose(80, 0)
	require.NoError(t, err)
	var open []net.Conn
	for i := range ForwardConns {
		c, err := net.Dial("tcp", info.Address)
		require.NoError(t, err)
		defer c.Close()
		got, err := read(c, 10*time.Second)
		require.NoError(t, err, "connection %d", i)
		assert.Equal(t, "hello", got)
		open = append(open, c)
	}
	extra, err := net.Dial("tcp", info.Address)
	require.NoError(t, err, "the backlog takes it")
	defer extra.Close()
	_, err = read(extra, 300*time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "not served while every place is taken")
	require.True(t, ne.Timeout())
	open[0].Close()
	got, err := read(extra, 10*time.Second)
	require.NoError(t, err, "served once one ended")
	assert.Equal(t, "hello", got)
}

// flakyListener fails its first accepts as a process out of descriptors
// does.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: fmt.Errorf("accept4: %w", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// An exposed port whose accept fails for want of descriptors goes on
// serving once they are back, rather than stopping for good.
func TestPortsAcceptRetries(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fl := &flakyListener{Listener: l}
	fl.fails.Store(3)
	p := &Ports{dial: greeter(t), log: hclog.NewNullLogger()}
	p.bound(1)
	e := &exposed{info: tool.PortInfo{Port: 80, Address: l.Addr().String()}, l: fl, done: make(chan struct{}), conns: map[net.Conn]bool{}}
	served := make(chan struct{})
	go func() { p.serve(e); close(served) }()
	c, err := net.Dial("tcp", e.info.Address)
	require.NoError(t, err)
	defer c.Close()
	got, err := read(c, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "hello", got)
	assert.Less(t, fl.fails.Load(), int32(0), "the failed accepts were retried")
	e.close()
	<-served
	assert.True(t, errors.Is(&net.OpError{Err: syscall.EMFILE}, syscall.EMFILE) && outOfDescriptors(&net.OpError{Err: syscall.EMFILE}))
}
