package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// errHeaderTooLarge is what a conn reads past its limit.
var errHeaderTooLarge = errors.New("proxy: header too large")

// A conn is one end of a proxied connection.
//
// During a handshake, the caller sets its deadlines and may limit how much it
// reads. After keepAlive, each read and write waits at most idle past the last
// traffic either way: both ends of a tunnel share the activity. So a busy
// download keeps the quiet upload direction alive, and a stalled tunnel ends.
//
// conn deliberately has no ReadFrom or WriteTo, so that io.CopyBuffer copies
// through the caller's buffer and every byte passes Read and Write; only
// spliceConns goes round them, between two TCP connections, and counts and
// sets deadlines as they do.
type conn struct {
	net.Conn
	t     *Traffic      // counts the bytes of a client's connection, or nil
	limit int64         // bytes left to read, or -1 for no limit
	idle  time.Duration // 0: the deadlines are the caller's
	last  *atomic.Int64 // unix nanoseconds of the last traffic either way
}

func newConn(c net.Conn) *conn {
	return &conn{Conn: c, limit: -1}
}

// keepAlive switches c to idle deadlines, sharing last with the other end.
func (c *conn) keepAlive(idle time.Duration, last *atomic.Int64) {
	_ = c.Conn.SetDeadline(time.Time{})
	c.limit, c.idle, c.last = -1, idle, last
	c.touch()
}

func (c *conn) touch() { c.last.Store(time.Now().UnixNano()) }

// quiet reports whether there has been no traffic either way for idle.
func (c *conn) quiet() bool {
	return time.Since(time.Unix(0, c.last.Load())) >= c.idle
}

func (c *conn) Read(p []byte) (int, error) {
	if c.limit == 0 {
		return 0, errHeaderTooLarge
	}
	if c.limit > 0 && int64(len(p)) > c.limit {
		p = p[:c.limit]
	}
	for {
		if c.idle > 0 {
			_ = c.Conn.SetReadDeadline(time.Unix(0, c.last.Load()).Add(c.idle))
		}
		n, err := c.Conn.Read(p)
		c.read(int64(n))
		if c.limit > 0 {
			c.limit -= int64(n)
		}
		if c.idle > 0 {
			if n > 0 {
				c.touch()
			} else if isTimeout(err) && !c.quiet() {
				continue // the other direction had traffic
			}
		}
		return n, err
	}
}

func (c *conn) Write(p []byte) (int, error) {
	if c.idle > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	}
	n, err := c.Conn.Write(p)
	c.wrote(int64(n))
	if c.idle > 0 && n > 0 {
		c.touch()
	}
	return n, err
}

// read counts n bytes read from a client's connection: sent by the sandbox.
func (c *conn) read(n int64) {
	if c.t != nil && n > 0 {
		c.t.Out.Add(n)
	}
}

// wrote counts n bytes written to a client's connection: received by the
// sandbox.
func (c *conn) wrote(n int64) {
	if c.t != nil && n > 0 {
		c.t.In.Add(n)
	}
}

// Traffic counts the bytes between the sandbox and the proxy.
//
// Out counts those the sandbox sent, In those it received, the proxy
// protocols' own included (request headers, SOCKS5 handshakes).
type Traffic struct {
	Out, In atomic.Int64
}

// tcpOf is the TCP connection c is, or nil: a passed connection of the
// sandbox (package internal/fdpass) or an upstream one.
func tcpOf(c net.Conn) *net.TCPConn {
	switch c := c.(type) {
	case *net.TCPConn:
		return c
	case interface{ TCP() *net.TCPConn }:
		return c.TCP()
	}
	return nil
}

// CloseWrite ends c's writing side if the connection allows it (TCP),
// and closes c otherwise (a yamux stream's Close is itself a half-close).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// copyBufSize is the size of the buffers tunnels copy through.
const copyBufSize = 128 << 10

var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, copyBufSize)
	return &b
}}

// bufReaders and bufWriters hold bufio readers and writers of copyBufSize
// for forwarded requests, which copy a response's body through them.
var (
	bufReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, copyBufSize) }}
	bufWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, copyBufSize) }}
)

// copyHalf copies src to dst, then passes the end of stream on as a
// half-close. On an error (an idle timeout, a reset) it closes both, which
// ends the other direction too.
func copyHalf(dst, src *conn) {
	var err error
	if d, s := tcpOf(dst.Conn), tcpOf(src.Conn); d != nil && s != nil {
		_, err = spliceConns(dst, src, d, s, -1)
	} else {
		buf := copyBufs.Get().(*[]byte)
		_, err = io.CopyBuffer(dst, src, *buf)
		copyBufs.Put(buf)
	}
	if err != nil {
		src.Close()
		dst.Close()
		return
	}
	_ = dst.CloseWrite()
}

// spliceChunk bounds what one splice moves between the counts of
// spliceConns.
const spliceChunk = 1 << 20

// spliceTick is how long one splice of spliceConns goes on, at most, past
// which it returns at its next wait or read: a fraction of idle, so that the
// other direction of a tunnel sees this one's traffic in time, and at most a
// second, so that the counts of a long connection stay current.
func spliceTick(idle time.Duration) time.Duration {
	return min(max(idle/16, time.Millisecond), time.Second)
}

// spliceConns copies src to dst, d and s their TCP connections, until src
// ends or, when remain is not negative, remain bytes have gone; it returns
// how many went. The kernel moves the bytes from one socket to the other
// (splice(2), through net.TCPConn.ReadFrom), a chunk at a time, each for a
// tick at most (see spliceTick). Between them it counts the bytes and keeps
// conn's idle rule: a write waits at most idle, and the copy ends once
// neither direction had traffic for idle.
func spliceConns(dst, src *conn, d, s *net.TCPConn, remain int64) (int64, error) {
	var total int64
	for remain != 0 {
		chunk := int64(spliceChunk)
		if remain > 0 {
			chunk = min(chunk, remain)
		}
		var writeBy time.Time
		if src.idle > 0 {
			_ = s.SetReadDeadline(time.Now().Add(spliceTick(src.idle)))
		}
		if dst.idle > 0 {
			writeBy = time.Now().Add(dst.idle)
			_ = d.SetWriteDeadline(writeBy)
		}
		n, err := d.ReadFrom(&io.LimitedReader{R: s, N: chunk})
		total += n
		if remain > 0 {
			remain -= n
		}
		if n > 0 {
			src.read(n)
			dst.wrote(n)
			if src.idle > 0 {
				src.touch()
			}
		}
		switch {
		case err != nil && isTimeout(err) && src.idle > 0 && (writeBy.IsZero() || time.Now().Before(writeBy)) && (n > 0 || !src.quiet()):
			continue // a tick's end, with traffic either way since idle
		case err != nil:
			return total, err
		case n < chunk && remain > 0:
			return total, io.ErrUnexpectedEOF
		case n < chunk:
			return total, nil // the end of src
		}
	}
	return total, nil
}

// tunnel copies client to up and up to client until both directions end
// or either fails or stays idle for idle. pending are bytes the client
// sent ahead, already read from it.
func tunnel(client, up *conn, pending []byte, idle time.Duration) {
	last := new(atomic.Int64)
	client.keepAlive(idle, last)
	up.keepAlive(idle, last)
	if len(pending) > 0 {
		if _, err := up.Write(pending); err != nil {
			return
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyHalf(up, client)
	}()
	copyHalf(client, up)
	<-done
}

// lingerTimeout bounds how long a closing connection waits for its
// client to read the last response.
const lingerTimeout = 500 * time.Millisecond

// lingerMax bounds what a closing connection reads and drops meanwhile.
const lingerMax = 256 << 10

// closeGracefully closes c after a last response.
//
// It ends the writing side first, then reads and drops what the client still
// sends for a moment. So unread request bytes do not make the kernel reset the
// connection before the client has read the response.
func closeGracefully(c *conn) {
	if err := c.CloseWrite(); err == nil {
		c.limit, c.idle = -1, 0
		_ = c.Conn.SetReadDeadline(time.Now().Add(lingerTimeout))
		n, _ := io.CopyN(io.Discard, c.Conn, lingerMax)
		c.read(n)
	}
	c.Close()
}
