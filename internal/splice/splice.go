// Package splice joins two connections, copying both ways.
//
// Two forwarders end in it: the front's forwarding of exposed ports into a
// sandbox, and boxsh-init's forwarding of the sandbox's connections out to the
// proxy.
package splice

import (
	"io"
	"net"
	"sync"
)

// Conns copies a to b and b to a until both directions end, passing on
// each end of stream as a half-close where the connection allows it.
func Conns(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
}
