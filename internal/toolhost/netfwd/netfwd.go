// Package netfwd exposes boxsh's network proxy inside a sandbox.
//
// It accepts TCP connections on the sandbox's loopback. It carries each
// connection, both ways, over a stream of a yamux session on the socket the
// front passed down. The sandbox cannot open Unix sockets and has no other way
// out. The front serves those streams with package internal/front/proxy.
//
// Egress captures the connections of programs that ignore the proxy
// variables: a name service gives each host name an address of the loopback,
// and the connections to it are carried to the proxy by name.
package netfwd

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/boxsh/boxsh/internal/splice"
)

// Forward accepts connections on l until ctx ends or l fails, and copies
// each to a new stream that open returns. It closes l when ctx ends.
func Forward(ctx context.Context, l net.Listener, open func() (net.Conn, error)) error {
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			s, err := open()
			if err != nil {
				return // the front is gone: the client sees the connection close
			}
			defer s.Close()
			splice.Conns(c, s)
		}()
	}
}
