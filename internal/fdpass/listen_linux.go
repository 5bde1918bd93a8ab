package fdpass

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxFDs is how many descriptors one message may bring in before the
// kernel drops the rest: room to see that a message brought more than one,
// and close them all.
const maxFDs = 8

// A Listener receives the connections boxsh-init passes on the proxy socket.
//
// Accept returns each as a *net.TCPConn (KindProxy) or a *Captured. It drops
// a message, closing whatever descriptors it brought, unless it is a valid
// Header with exactly one descriptor, and that descriptor a connected TCP
// socket of the loopback, not listening, in a network namespace other than
// the front's own (the sandbox's). So a compromised boxsh-init can pass
// nothing but a connection of its own sandbox: no file, no listening socket,
// no socket of the host's network.
type Listener struct {
	sock *net.UnixConn
	// netns is the cookie of the front's own network namespace, 0 when
	// the kernel does not tell (before Linux 5.14): the check is skipped.
	netns uint64
	// Rejected, when set, is told each message dropped and why. It runs
	// on Accept's goroutine.
	Rejected func(error)
	rejected atomic.Int64
}

// Listen receives passed connections on sock, a Unix SOCK_SEQPACKET socket.
func Listen(sock *net.UnixConn) *Listener {
	return &Listener{sock: sock, netns: ownNetns()}
}

// ownNetns is the cookie of this process's network namespace, 0 when
// unknown.
func ownNetns() uint64 {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if err != nil {
		return 0
	}
	return c
}

// Accept waits for the next valid passed connection. It fails when the
// socket does: io.EOF once boxsh-init has closed its end.
func (l *Listener) Accept() (net.Conn, error) {
	buf := make([]byte, MaxHeaderSize+1)
	oob := make([]byte, syscall.CmsgSpace(4*maxFDs))
	for {
		n, oobn, flags, _, err := l.sock.ReadMsgUnix(buf, oob)
		if err != nil {
			return nil, err
		}
		if n == 0 && oobn == 0 {
			return nil, io.EOF
		}
		c, err := take(buf[:n], oob[:oobn], flags, l.netns)
		if err != nil {
			l.rejected.Add(1)
			if l.Rejected != nil {
				l.Rejected(err)
			}
			continue
		}
		return c, nil
	}
}

// Close closes the socket; Accept then fails.
func (l *Listener) Close() error { return l.sock.Close() }

// Addr is the socket's address.
func (l *Listener) Addr() net.Addr { return l.sock.LocalAddr() }

// RejectedCount is how many messages Accept dropped.
func (l *Listener) RejectedCount() int64 { return l.rejected.Load() }

// take makes the connection of one message: msg its bytes, oob its control
// data, flags recvmsg's. It closes every descriptor the message brought
// unless it returns the connection.
func take(msg, oob []byte, flags int, netns uint64) (net.Conn, error) {
	var fds []int
	cmsgs, perr := syscall.ParseSocketControlMessage(oob)
	for _, m := range cmsgs {
		if m.Header.Level != syscall.SOL_SOCKET || m.Header.Type != syscall.SCM_RIGHTS {
			perr = errors.Join(perr, fmt.Errorf("control message %d/%d", m.Header.Level, m.Header.Type))
			continue
		}
		got, err := syscall.ParseUnixRights(&m)
		perr = errors.Join(perr, err)
		fds = append(fds, got...)
	}
	fail := func(err error) (net.Conn, error) {
		for _, fd := range fds {
			_ = syscall.Close(fd)
		}
		return nil, fmt.Errorf("fdpass: dropped a message: %w", err)
	}
	switch {
	case perr != nil:
		return fail(perr)
	case flags&(syscall.MSG_CTRUNC|syscall.MSG_TRUNC) != 0:
		return fail(errors.New("truncated (too long, or too many descriptors)"))
	case len(fds) != 1:
		return fail(fmt.Errorf("%d descriptors, not 1", len(fds)))
	}
	h, err := ParseHeader(msg)
	if err != nil {
		return fail(err)
	}
	if err := check(fds[0], netns); err != nil {
		return fail(err)
	}
	f := os.NewFile(uintptr(fds[0]), "passed")
	nc, err := net.FileConn(f)
	f.Close() // FileConn has a descriptor of its own
	fds = nil
	if err != nil {
		return fail(err)
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		return fail(fmt.Errorf("a %T, not a TCP connection", nc))
	}
	if h.Kind == KindCaptured {
		return &Captured{TCPConn: tc, Name: h.Name, Port: h.Port}, nil
	}
	return tc, nil
}

// check tells whether fd is a connected TCP socket (or MPTCP, which Go's
// listeners take by default) of the loopback, not listening, and, when netns is not 0, of another network namespace.
func check(fd int, netns uint64) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("fstat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("not a socket (mode %#o)", st.Mode&unix.S_IFMT)
	}
	for _, o := range []struct {
		name string
		opt  int
		ok   func(int) bool
	}{
		{"type", unix.SO_TYPE, func(v int) bool { return v == unix.SOCK_STREAM }},
		{"domain", unix.SO_DOMAIN, func(v int) bool { return v == unix.AF_INET || v == unix.AF_INET6 }},
		{"protocol", unix.SO_PROTOCOL, func(v int) bool { return v == unix.IPPROTO_TCP || v == unix.IPPROTO_MPTCP }},
		{"listening", unix.SO_ACCEPTCONN, func(v int) bool { return v == 0 }},
	} {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, o.opt)
		if err != nil {
			return fmt.Errorf("socket %s: %w", o.name, err)
		}
		if !o.ok(v) {
			return fmt.Errorf("not a TCP connection (socket %s %d)", o.name, v)
		}
	}
	for _, end := range []struct {
		name string
		get  func(int) (unix.Sockaddr, error)
	}{{"local", unix.Getsockname}, {"peer", unix.Getpeername}} {
		sa, err := end.get(fd)
		if err != nil {
			return fmt.Errorf("%s address: %w", end.name, err)
		}
		if a, ok := loopback(sa); !ok {
			return fmt.Errorf("%s address %v is not of the loopback", end.name, a)
		}
	}
	if netns != 0 {
		c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
		if err != nil {
			return fmt.Errorf("socket's network namespace: %w", err)
		}
		if c == netns {
			return errors.New("a socket of the front's own network namespace, not the sandbox's")
		}
	}
	return nil
}

// loopback is sa's address, and whether it is one of the loopback.
func loopback(sa unix.Sockaddr) (netip.Addr, bool) {
	var a netip.Addr
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		a = netip.AddrFrom4(sa.Addr)
	case *unix.SockaddrInet6:
		a = netip.AddrFrom16(sa.Addr)
	default:
		return netip.Addr{}, false
	}
	return a, a.Unmap().IsLoopback()
}
