// Package splice joins two connections, copying both ways.
//
// The forwarding of exposed ports into a sandbox ends in it on both sides:
// the front's, and boxsh-init's to the sandbox's ports.
package splice

import (
	"io"
	"net"
	"sync"
)

// bufSize is the size of the buffers Conns copies through. One side of
// each forwarder is a yamux stream, whose every write is a frame and a
// hand-off between goroutines: large writes make them few.
const bufSize = 128 << 10

var bufs = sync.Pool{New: func() any {
	b := make([]byte, bufSize)
	return &b
}}

// Conns copies a to b and b to a until both directions end, passing on
// each end of stream as a half-close where the connection allows it.
func Conns(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		buf := bufs.Get().(*[]byte)
		// Only Read and Write: a TCP connection's ReadFrom and WriteTo
		// would copy through io.Copy's own buffer instead.
		_, _ = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *buf)
		bufs.Put(buf)
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
