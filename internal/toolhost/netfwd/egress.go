package netfwd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/boxsh/boxsh/internal/splice"
)

// Defaults of the Egress fields.
var (
	// DefaultPrefix is the range of the synthetic addresses: on the
	// sandbox's loopback, which holds all of 127.0.0.0/8, so boxsh-init
	// binds them without configuring anything.
	DefaultPrefix = netip.MustParsePrefix("127.77.0.0/16")
)

const (
	// DefaultMaxNames bounds the names given an address.
	DefaultMaxNames = 512
	// maxListeners bounds the listeners of all names together.
	maxListeners = 4096
	// handshakeTimeout bounds the proxy's answer to a captured connection.
	handshakeTimeout = 15 * time.Second
)

// Egress captures the connections of programs that ignore the proxy
// variables, and carries them to the front's proxy.
//
// Its name service (ServeDNS) answers each name with a synthetic address of
// Prefix, the same one for the name's life. Once a name has an address,
// Egress listens on it for each of Ports. A connection accepted there is
// carried to the proxy by Dial, which names the name and the port: the proxy
// decides on them as on a CONNECT. The address itself never leaves the
// sandbox.
//
// An address outside Prefix has no route in the sandbox (its network
// namespace holds only the loopback), nor has a port not in Ports.
type Egress struct {
	// Ports are the ports captured on each address.
	Ports []uint16
	// Dial carries a connection to name:port to the proxy. It returns the
	// stream to copy to once the proxy has allowed it and connected, and
	// an error otherwise.
	Dial func(ctx context.Context, name string, port uint16) (net.Conn, error)
	// Prefix is the range of the addresses (default DefaultPrefix).
	Prefix netip.Prefix
	// MaxNames bounds the names given an address (default
	// DefaultMaxNames, fewer when Ports are many: the listeners are
	// bounded too). Past it, a new name gets no address.
	MaxNames int

	once   sync.Once
	ctx    context.Context
	mu     sync.Mutex
	names  map[string]netip.Addr
	next   int // the index of the next address to give (see addr)
	lns    []net.Listener
	closed bool
	wg     sync.WaitGroup
}

// errFull reports that no more names get an address.
var errFull = errors.New("no more synthetic addresses")

func (e *Egress) init() {
	e.once.Do(func() {
		if !e.Prefix.IsValid() {
			e.Prefix = DefaultPrefix
		}
		if e.MaxNames <= 0 {
			e.MaxNames = DefaultMaxNames
		}
		if len(e.Ports) > 0 {
			e.MaxNames = min(e.MaxNames, maxListeners/len(e.Ports))
		}
		if e.ctx == nil {
			e.ctx = context.Background()
		}
		e.names = map[string]netip.Addr{}
	})
}

// Start makes ctx the context of the captured connections: when it ends,
// Egress closes its listeners and the connections. Call it before ServeDNS.
func (e *Egress) Start(ctx context.Context) {
	e.ctx = ctx
	e.init()
	context.AfterFunc(ctx, e.close)
}

// close closes the listeners; the accept loops end with them.
func (e *Egress) close() {
	e.mu.Lock()
	e.closed = true
	lns := e.lns
	e.lns = nil
	e.mu.Unlock()
	for _, l := range lns {
		l.Close()
	}
}

// Wait waits for the accept loops and connections to end.
func (e *Egress) Wait() { e.wg.Wait() }

// Lookup returns the address of name, a normalized host name (see
// normalizeName). It gives the name one and listens on it the first time,
// and fails when no more names get an address.
func (e *Egress) Lookup(name string) (netip.Addr, error) {
	e.init()
	e.mu.Lock()
	defer e.mu.Unlock()
	if a, ok := e.names[name]; ok {
		return a, nil
	}
	if e.closed {
		return netip.Addr{}, net.ErrClosed
	}
	if len(e.names) >= e.MaxNames {
		return netip.Addr{}, errFull
	}
	// An address some program of the sandbox holds a port of is skipped:
	// it must not get the name's connections.
	var a netip.Addr
	var lns []net.Listener
	var err error
	for range maxSkips {
		var ok bool
		if a, ok = e.addr(e.next); !ok {
			return netip.Addr{}, errFull
		}
		e.next++
		if lns, err = listenAll(a, e.Ports); err == nil {
			break
		}
	}
	if err != nil {
		return netip.Addr{}, err
	}
	e.names[name] = a
	e.lns = append(e.lns, lns...)
	for i, l := range lns {
		e.wg.Go(func() { e.accept(l, name, e.Ports[i]) })
	}
	return a, nil
}

// maxSkips bounds the addresses one Lookup tries.
const maxSkips = 16

// listenAll listens on a for each of ports, or on none.
func listenAll(a netip.Addr, ports []uint16) ([]net.Listener, error) {
	var lns []net.Listener
	for _, port := range ports {
		l, err := net.Listen("tcp", netip.AddrPortFrom(a, port).String())
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("egress: %w", err)
		}
		lns = append(lns, l)
	}
	return lns, nil
}

// addr is the i-th address to give: the i+1-th of Prefix, skipping those
// that end in 0 or 255, which some programs take for a network or a
// broadcast address.
func (e *Egress) addr(i int) (netip.Addr, bool) {
	a := e.Prefix.Masked().Addr()
	n := 0
	for {
		a = a.Next()
		if !a.IsValid() || !e.Prefix.Contains(a) {
			return netip.Addr{}, false
		}
		if last := a.As16()[15]; last == 0 || last == 255 {
			continue
		}
		if n == i {
			return a, true
		}
		n++
	}
}

// accept carries each connection accepted on l, for name:port, to the
// proxy.
func (e *Egress) accept(l net.Listener, name string, port uint16) {
	for {
		c, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) || e.ctx.Err() != nil {
				return
			}
			// Out of descriptors, say: let some be freed.
			select {
			case <-time.After(50 * time.Millisecond):
				continue
			case <-e.ctx.Done():
				return
			}
		}
		e.wg.Go(func() { e.carry(c, name, port) })
	}
}

// carry connects c to name:port through the proxy and copies both ways. A
// refused connection is reset, so that the program sees it fail at once.
func (e *Egress) carry(c net.Conn, name string, port uint16) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(e.ctx, handshakeTimeout)
	s, err := e.Dial(ctx, name, port)
	cancel()
	if err != nil {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		return
	}
	defer s.Close()
	stop := context.AfterFunc(e.ctx, func() { c.Close(); s.Close() })
	defer stop()
	splice.Conns(c, s)
}

// SOCKS5 (RFC 1928), as netfwd speaks it to the proxy.
const (
	socks5Version = 0x05
	// SOCKSMethodCaptured is the SOCKS5 method of a captured connection:
	// one of the private methods (0x80 to 0xfe), with no sub-negotiation.
	// The proxy records the connection's protocol as "transparent".
	SOCKSMethodCaptured = 0x80
	socksConnect        = 0x01
	socksDomain         = 0x03
	socksSucceeded      = 0x00
)

// DialSOCKS returns an Egress.Dial that opens a stream with open and asks the
// proxy on it for name:port with SOCKS5, under SOCKSMethodCaptured.
func DialSOCKS(open func() (net.Conn, error)) func(ctx context.Context, name string, port uint16) (net.Conn, error) {
	return func(ctx context.Context, name string, port uint16) (net.Conn, error) {
		if len(name) == 0 || len(name) > 255 {
			return nil, fmt.Errorf("socks: bad name %q", name)
		}
		s, err := open()
		if err != nil {
			return nil, err
		}
		stop := context.AfterFunc(ctx, func() { s.Close() })
		err = socksHandshake(s, name, port)
		if !stop() {
			err = ctx.Err()
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("socks %s: %w", net.JoinHostPort(name, strconv.Itoa(int(port))), err)
		}
		return s, nil
	}
}

// socksHandshake asks for name:port on s.
func socksHandshake(s net.Conn, name string, port uint16) error {
	req := []byte{socks5Version, 1, SOCKSMethodCaptured, socks5Version, socksConnect, 0, socksDomain, byte(len(name))}
	req = binary.BigEndian.AppendUint16(append(req, name...), port)
	if _, err := s.Write(req); err != nil {
		return err
	}
	var b [12]byte
	if _, err := io.ReadFull(s, b[:2]); err != nil {
		return err
	}
	if b[0] != socks5Version || b[1] != SOCKSMethodCaptured {
		return fmt.Errorf("method refused")
	}
	// Reply: version, code, reserved, an IPv4 bound address and port (the
	// proxy's always), which netfwd has no use for.
	if _, err := io.ReadFull(s, b[:4]); err != nil {
		return err
	}
	if b[1] != socksSucceeded {
		return fmt.Errorf("refused (code %d)", b[1])
	}
	n := 6
	switch b[3] {
	case 0x04:
		n = 18
	case socksDomain:
		return fmt.Errorf("unexpected bound address")
	}
	_, err := io.ReadFull(s, make([]byte, n))
	return err
}
