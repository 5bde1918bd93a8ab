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
// through the caller's buffer and every byte passes Read and Write.
type conn struct {
	net.Conn
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
	if c.idle > 0 && n > 0 {
		c.touch()
	}
	return n, err
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
	buf := copyBufs.Get().(*[]byte)
	_, err := io.CopyBuffer(dst, src, *buf)
	copyBufs.Put(buf)
	if err != nil {
		src.Close()
		dst.Close()
		return
	}
	_ = dst.CloseWrite()
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
		_, _ = io.CopyN(io.Discard, c.Conn, lingerMax)
	}
	c.Close()
}
