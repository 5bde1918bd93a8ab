// Package netfwd exposes boxsh's network proxy inside a sandbox.
//
// It accepts TCP connections on the sandbox's loopback, and passes each, as a
// descriptor, to the front over the proxy socket the front passed down
// (package internal/fdpass): the front's proxy (internal/front/proxy) then
// reads and writes the program's connection itself. The sandbox cannot open
// Unix sockets and has no other way out.
//
// Egress captures the connections of programs that ignore the proxy
// variables: a name service gives each host name an address of the loopback,
// and the connections to it are passed to the proxy with the name.
package netfwd

import (
	"context"
	"errors"
	"net"
)

// Forward accepts connections on l until ctx ends or l fails, and hands
// each to pass, which passes it to the front; Forward then closes its own
// descriptor. A connection pass fails on is closed: the front is gone. It
// closes l when ctx ends.
func Forward(ctx context.Context, l net.Listener, pass func(*net.TCPConn) error) error {
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = pass(tc)
		}
		c.Close()
	}
}
