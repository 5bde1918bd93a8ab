package netfwd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
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
)

// Egress captures the connections of programs that ignore the proxy
// variables, and passes them to the front's proxy.
//
// Its name service (ServeDNS) answers each name with a synthetic address of
// Prefix, the same one for the name's life. Once a name has an address,
// Egress listens on it for each of Ports. A connection accepted there is
// passed to the proxy by Pass, with the name and the port: the proxy decides
// on them as on a CONNECT, and resets the connection when it refuses it. The
// address itself never leaves the sandbox.
//
// An address outside Prefix has no route in the sandbox (its network
// namespace holds only the loopback), nor has a port not in Ports.
type Egress struct {
	// Ports are the ports captured on each address.
	Ports []uint16
	// Pass passes a connection to name:port to the proxy, which then
	// holds a descriptor of its own; Egress closes its own after. A
	// connection Pass fails on is reset.
	Pass func(c *net.TCPConn, name string, port uint16) error
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

// Start makes ctx Egress's context: when it ends, Egress closes its
// listeners. Call it before ServeDNS.
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

// Wait waits for the accept loops to end.
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

// accept passes each connection accepted on l, for name:port, to the
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
		tc, ok := c.(*net.TCPConn)
		if ok && e.Pass(tc, name, port) != nil {
			_ = tc.SetLinger(0) // the program sees it fail at once
		}
		c.Close()
	}
}
