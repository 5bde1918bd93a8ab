package fdpass

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

const testTimeout = 5 * time.Second

// pair is a fake boxsh-init's end of a proxy socket and the front's
// Listener on the other end. ownNetns tells whether the Listener refuses
// the sockets of this process's network namespace, as it does in boxsh,
// where the sandbox has a namespace of its own: the tests that pass valid
// connections, made in this namespace, turn the check off.
func pair(t *testing.T, ownNetnsCheck bool) (*net.UnixConn, *Listener) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "proxy")
		defer f.Close()
		c, err := net.FileConn(f)
		require.NoError(t, err)
		return c.(*net.UnixConn)
	}
	initSide, frontSide := conn(fds[0]), conn(fds[1])
	t.Cleanup(func() { initSide.Close(); frontSide.Close() })
	l := Listen(frontSide)
	if ownNetnsCheck {
		require.NotZero(t, l.netns, "the kernel tells a socket's network namespace (Linux 5.14)")
	} else {
		l.netns = 0
	}
	return initSide, l
}

// sendFDs sends msg with fds as SCM_RIGHTS, as a compromised boxsh-init may.
func sendFDs(t *testing.T, sock *net.UnixConn, msg []byte, fds ...int) {
	t.Helper()
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	_, _, err := sock.WriteMsgUnix(msg, oob, nil)
	require.NoError(t, err)
}

func header(t *testing.T, h Header) []byte {
	t.Helper()
	b, err := h.Append(nil)
	require.NoError(t, err)
	return b
}

// fdOf is c's descriptor (valid while c is open).
func fdOf(t *testing.T, c syscall.Conn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	require.NoError(t, err)
	var fd int
	require.NoError(t, rc.Control(func(u uintptr) { fd = int(u) }))
	return fd
}

// tcpPair is a connected pair of TCP connections on the loopback: the
// dialling end (the program) and the accepted one (boxsh-init's).
func tcpPair(t *testing.T) (program, accepted *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	a, err := l.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { c.Close(); a.Close() })
	return c.(*net.TCPConn), a.(*net.TCPConn)
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// accept runs l.Accept once in the background.
func accept(l *Listener) <-chan net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		ch <- c
	}()
	return ch
}

// A connection boxsh-init accepted comes out of the front's Listener as a
// TCP connection to the program, the program's bytes both ways; a captured
// one with its name and port.
func TestPassConnections(t *testing.T) {
	sock, l := pair(t, false)
	program, accepted := tcpPair(t)
	require.NoError(t, Send(sock, accepted, Header{Kind: KindProxy}))
	accepted.Close() // the front has its own descriptor
	got := <-accept(l)
	require.NotNil(t, got)
	defer got.Close()
	tc, ok := got.(*net.TCPConn)
	require.True(t, ok, "a %T", got)
	_, err := program.Write([]byte("GET http://example.com/ HTTP/1.1\r\n\r\n"))
	require.NoError(t, err)
	require.NoError(t, tc.SetDeadline(time.Now().Add(testTimeout)))
	b := make([]byte, 8)
	_, err = io.ReadFull(tc, b)
	require.NoError(t, err)
	assert.Equal(t, "GET http", string(b))
	_, err = tc.Write([]byte("pong"))
	require.NoError(t, err)
	require.NoError(t, program.SetDeadline(time.Now().Add(testTimeout)))
	_, err = io.ReadFull(program, b[:4])
	require.NoError(t, err)
	assert.Equal(t, "pong", string(b[:4]))

	program, accepted = tcpPair(t)
	require.NoError(t, Send(sock, accepted, Header{Kind: KindCaptured, Name: "github.com", Port: 22}))
	got = <-accept(l)
	require.NotNil(t, got)
	defer got.Close()
	c, ok := got.(*Captured)
	require.True(t, ok, "a %T", got)
	host, port := c.Destination()
	assert.Equal(t, "github.com", host)
	assert.Equal(t, 22, port)
	assert.Equal(t, program.LocalAddr().String(), c.TCP().RemoteAddr().String())
	assert.Zero(t, l.RejectedCount())
}

// What a compromised boxsh-init may send instead of a connection it
// accepted is dropped, its descriptors closed, and the Listener goes on to
// the next message.
func TestPassRejects(t *testing.T) {
	sock, l := pair(t, false)
	var reasons []string
	l.Rejected = func(err error) { reasons = append(reasons, err.Error()) }
	proxy := header(t, Header{Kind: KindProxy})

	f, err := os.Create(filepath.Join(t.TempDir(), "secret"))
	require.NoError(t, err)
	defer f.Close()
	listening, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer listening.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer udp.Close()
	unixFDs, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(unixFDs[0])
	defer unix.Close(unixFDs[1])
	var pipe [2]int
	require.NoError(t, unix.Pipe2(pipe[:], unix.O_CLOEXEC))
	defer unix.Close(pipe[0])
	defer unix.Close(pipe[1])
	unconnected, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(unconnected)
	_, a1 := tcpPair(t)
	_, a2 := tcpPair(t)

	before := openFDs(t)
	bad := []struct {
		name string
		msg  []byte
		fds  []int
	}{
		{"a file", proxy, []int{int(f.Fd())}},
		{"a listening socket", proxy, []int{fdOf(t, listening.(*net.TCPListener))}},
		{"a UDP socket", proxy, []int{fdOf(t, udp.(*net.UDPConn))}},
		{"a Unix socket", proxy, []int{unixFDs[0]}},
		{"a pipe", proxy, []int{pipe[1]}},
		{"an unconnected TCP socket", proxy, []int{unconnected}},
		{"two connections", proxy, []int{fdOf(t, a1), fdOf(t, a2)}},
		{"no descriptor", proxy, nil},
		{"a bad header", []byte{KindCaptured, 0, 22, 10, 'x'}, []int{fdOf(t, a1)}},
		{"an unknown kind", []byte{9, 0, 0, 0}, []int{fdOf(t, a1)}},
		{"a proxy connection with a name", []byte{KindProxy, 0, 80, 1, 'x'}, []int{fdOf(t, a1)}},
		{"a captured connection without a port", []byte{KindCaptured, 0, 0, 1, 'x'}, []int{fdOf(t, a1)}},
	}
	for _, b := range bad {
		sendFDs(t, sock, b.msg, b.fds...)
	}
	// Then a real one, which Accept returns.
	program, accepted := tcpPair(t)
	require.NoError(t, Send(sock, accepted, Header{Kind: KindProxy}))
	accepted.Close()
	got := <-accept(l)
	require.NotNil(t, got)
	defer got.Close()
	assert.Equal(t, program.LocalAddr().String(), got.RemoteAddr().String())
	require.Len(t, reasons, len(bad), "%q", reasons)
	assert.Equal(t, int64(len(bad)), l.RejectedCount())
	for i, b := range bad {
		t.Logf("%s: %s", b.name, reasons[i])
	}
	// The Listener kept only the connection it returned (beside the
	// program's end).
	assert.Equal(t, before+2, openFDs(t))
}

// A TCP connection of the front's own network namespace, as one to a port
// of the host would be, is dropped: boxsh-init's are of the sandbox's.
func TestPassRejectsHostSocket(t *testing.T) {
	sock, l := pair(t, true)
	hostService, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer hostService.Close()
	toHost, err := net.Dial("tcp", hostService.Addr().String())
	require.NoError(t, err)
	defer toHost.Close()
	served, err := hostService.Accept()
	require.NoError(t, err)
	defer served.Close()

	rejected := make(chan error, 1)
	l.Rejected = func(err error) { rejected <- err }
	before := openFDs(t)
	ch := accept(l)
	require.NoError(t, Send(sock, toHost.(*net.TCPConn), Header{Kind: KindCaptured, Name: "example.com", Port: 443}))
	select {
	case err := <-rejected:
		assert.ErrorContains(t, err, "network namespace")
	case c := <-ch:
		t.Fatalf("accepted a socket of the host's network: %v", c)
	case <-time.After(testTimeout):
		t.Fatal("no answer")
	}
	assert.Equal(t, before, openFDs(t), "the passed descriptor is closed")
	// Nothing was written to the host's service.
	require.NoError(t, served.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	n, err := served.Read(make([]byte, 1))
	assert.Zero(t, n)
	var ne net.Error
	assert.True(t, errors.As(err, &ne) && ne.Timeout(), "%v", err)
	sock.Close()
	assert.Nil(t, <-ch, "Accept fails once boxsh-init's end is closed")
}

// A flood of descriptors leaves none open in the front.
func TestPassFlood(t *testing.T) {
	sock, l := pair(t, false)
	before := openFDs(t)
	const n = 2000
	msg := header(t, Header{Kind: KindProxy})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			f, err := os.Open(os.DevNull)
			if err != nil {
				return
			}
			_, _, err = sock.WriteMsgUnix(msg, syscall.UnixRights(int(f.Fd()), int(f.Fd())), nil)
			f.Close()
			if err != nil {
				return
			}
		}
		sock.Close()
	}()
	c, err := l.Accept()
	assert.Nil(t, c)
	assert.ErrorIs(t, err, io.EOF)
	<-done
	assert.Equal(t, int64(n), l.RejectedCount())
	assert.Equal(t, before-1, openFDs(t), "none of the descriptors, and boxsh-init's end closed")
}
