package rpc

import (
	"net"
	"net/http"
	"sync"
)

// connLimit bounds the connections a listener has open at once. So the
// HTTP transport never holds more of the process's descriptors than its
// share. At the bound it first closes the idle kept-alive connections.
// Then it accepts no more until one closes. The next connections wait in
// the kernel's backlog, where they hold no descriptor of the process.
type connLimit struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	stop  sync.Once

	mu   sync.Mutex
	idle map[net.Conn]bool
	// full is set while Accept waits for a place: a connection that
	// turns idle meanwhile is closed at once.
	full bool
}

// limitConns wraps ln with a bound of n connections open at once.
func limitConns(ln net.Listener, n int) *connLimit {
	return &connLimit{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{}), idle: make(map[net.Conn]bool)}
}

// Accept waits for a free place, closing the idle connections when
// there is none, and accepts a connection for it.
func (l *connLimit) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.closeIdle()
		defer l.setFull(false)
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

// Close closes the listener and ends an Accept waiting for a place.
func (l *connLimit) Close() error {
	l.stop.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// connState keeps the set of idle connections (http.Server.ConnState).
func (l *connLimit) connState(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case state == http.StateIdle && l.full:
		go c.Close()
	case state == http.StateIdle:
		l.idle[c] = true
	default:
		delete(l.idle, c)
	}
}

// closeIdle closes the connections waiting for a next request, and those
// that turn idle until setFull(false).
func (l *connLimit) closeIdle() {
	l.mu.Lock()
	idle := l.idle
	l.idle = make(map[net.Conn]bool)
	l.full = true
	l.mu.Unlock()
	for c := range idle {
		c.Close()
	}
}

// setFull sets whether Accept waits for a place.
func (l *connLimit) setFull(full bool) {
	l.mu.Lock()
	l.full = full
	l.mu.Unlock()
}

// limitedConn gives its place back when closed.
type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
