package netfwd

import (
	"context"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/splice"
)

// dialTimeout bounds a connection to a port of the sandbox's loopback.
const dialTimeout = 5 * time.Second

// ServeInbound serves the streams that the front opens on the forwarding
// socket's session (see initproto.ForwardHeader), until ctx ends or accept
// fails.
//
// Each stream is connected to 127.0.0.1:PORT, the port its header names, in
// this process's own network namespace (the sandbox's), and copied both ways.
// It connects nowhere else: the port is all a stream chooses.
func ServeInbound(ctx context.Context, accept func() (net.Conn, error)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		s, err := accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Go(func() {
			defer s.Close()
			_ = s.SetReadDeadline(time.Now().Add(dialTimeout))
			port, err := initproto.ReadForwardHeader(s)
			if err != nil {
				return
			}
			_ = s.SetReadDeadline(time.Time{})
			d := net.Dialer{Timeout: dialTimeout}
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
			if err != nil {
				return // nothing listens: the host's client sees the connection close
			}
			defer c.Close()
			splice.Conns(s, c)
		})
	}
}
