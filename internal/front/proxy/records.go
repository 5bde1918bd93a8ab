package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
)

// A terminated tunnel moves a response's body from the upstream's TLS
// records to the client's: each 16 KiB record read, decrypted, encrypted
// again and written alone, a write to the client's connection (a yamux
// frame, a system call) per record. The types here let it move up to
// copyBufSize at a time, without waiting for bytes that have not come:
// recordReader knows when the upstream's next record is already read,
// gatherBody reads on while it is, and gatherConn writes the client's
// records of one plaintext write together, from a goroutine of its own
// while the next is read and opened.

// TLS record framing: a header of a content type, a version and a length.
const (
	recordHeaderLen = 5
	recordTypeAlert = 21
)

// A recordReader is the connection under a tls.Client that reads ahead
// through a buffer, and returns at most one record a Read: so that
// tls.Conn holds no bytes past the record it asked for, and whether the
// next record has come whole is known from the buffer alone.
type recordReader struct {
	net.Conn
	br *bufio.Reader
	// left is what Read may still return of the current records, 0 at the
	// start of a record.
	left int
	// lost is set when the bytes are not TLS records: Read then passes
	// them on as they come, and next stays false.
	lost bool
	// next tells whether the record after those returned is whole in br,
	// and of minNextRecord at least, as of the last Read (read from
	// another goroutine).
	next atomic.Bool
}

func newRecordReader(c net.Conn) *recordReader {
	return &recordReader{Conn: c, br: bufio.NewReaderSize(c, copyBufSize)}
}

func (r *recordReader) Read(p []byte) (int, error) {
	if r.left == 0 && !r.lost {
		if _, err := r.br.Peek(recordHeaderLen); err != nil {
			r.lost = true // an end, or an error, within a header
		} else {
			n, _ := r.header(0)
			r.left = n
			// A close_notify alert come behind the record goes with it, so
			// that tls.Conn sees the end with the record's data (its Read
			// looks for an alert it holds).
			if m, typ := r.header(n); typ == recordTypeAlert && r.br.Buffered() >= n+m {
				r.left += m
			}
		}
	}
	if r.lost {
		r.next.Store(false)
		return r.br.Read(p)
	}
	n, err := r.br.Read(p[:min(len(p), r.left)])
	r.left -= n
	m, _ := r.header(0)
	r.next.Store(r.left == 0 && m >= minNextRecord && r.br.Buffered() >= m)
	return n, err
}

// minNextRecord is the least length of a record that tells a reader to
// read on: TLS 1.3 hides a record's type, and a small one may be a
// session ticket or a key update, which tls.Conn reads and then waits for
// data, not data itself.
const minNextRecord = 4 << 10

// header is the length (its header's included) and content type of the
// record at offset off of what br holds, or 0 when br does not hold its
// header.
func (r *recordReader) header(off int) (n int, typ byte) {
	if r.br.Buffered() < off+recordHeaderLen {
		return 0, 0
	}
	h, _ := r.br.Peek(off + recordHeaderLen)
	h = h[off:]
	return recordHeaderLen + (int(h[3])<<8 | int(h[4])), h[0]
}

// minGather is the room a body's Read needs left to read another record
// into.
const minGather = 16 << 10

// A gatherBody is a response body of a Content-Length read over a
// recordReader: a Read goes on reading while the next record has come
// whole, so that one Read returns what has come, up to the caller's
// buffer, and never waits once it has something. (A chunked body's next
// Read may wait for a chunk's header after the record that ends the
// chunk before.)
type gatherBody struct {
	io.ReadCloser
	rec *recordReader
}

func (b *gatherBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	for err == nil && n > 0 && len(p)-n >= minGather && b.rec.next.Load() {
		var m int
		m, err = b.ReadCloser.Read(p[n:])
		n += m
	}
	return n, err
}

// recordTransport is the upstream transport of a terminated tunnel: the
// bodies of its responses of a Content-Length (as they came, not
// decompressed) are gatherBodies over the recordReader of the connection
// each came on.
type recordTransport struct {
	http.RoundTripper
	mu      sync.Mutex
	readers map[net.Conn]*recordReader // by the connection the dialer made
}

// add has t know the recordReader under c, until the returned function
// is called.
func (t *recordTransport) add(c net.Conn, r *recordReader) (remove func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.readers == nil {
		t.readers = map[net.Conn]*recordReader{}
	}
	t.readers[c] = r
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.readers, c)
	}
}

func (t *recordTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var rec *recordReader
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			t.mu.Lock()
			rec = t.readers[info.Conn]
			t.mu.Unlock()
		},
	}))
	resp, err := t.RoundTripper.RoundTrip(r)
	if err == nil && rec != nil && resp.ContentLength >= 0 && len(resp.TransferEncoding) == 0 && !resp.Uncompressed && resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body = &gatherBody{ReadCloser: resp.Body, rec: rec}
	}
	return resp, err
}

// A gatherConn is the connection under the client's tls.Server: while
// held, the records written are gathered, and written together on
// release (or when maxGather of them wait).
//
// The write on release is outside tls.Conn's Write, so that tls.Conn's
// Close does not know of it: a record written meanwhile (Close's alert)
// is queued behind it rather than waiting for it, and Close then ends it.
type gatherConn struct {
	net.Conn
	mu      sync.Mutex
	written sync.Cond // a write to Conn ended
	holds   int
	writing bool   // a write to Conn is under way, mu unlocked
	buf     []byte // gathered, to be written: from gatherBufs, or nil
	err     error  // of a write a goroutine made (releaseAsync), for the next
}

// maxGather bounds what a gatherConn gathers: the records of copyBufSize
// of plaintext, their headers and tags included.
const maxGather = copyBufSize + 4<<10

// gatherBufs hold the buffers of gatherConns, lent while there is
// something to write.
var gatherBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, maxGather)
	return &b
}}

// gather appends p to what is to be written.
func (c *gatherConn) gather(p []byte) {
	if c.buf == nil {
		c.buf = (*gatherBufs.Get().(*[]byte))[:0]
	}
	c.buf = append(c.buf, p...)
}

func newGatherConn(c net.Conn) *gatherConn {
	g := &gatherConn{Conn: c}
	g.written.L = &g.mu
	return g
}

func (c *gatherConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.writing && len(c.buf)+len(p) > maxGather {
		c.written.Wait()
	}
	if c.err != nil {
		return 0, c.err
	}
	if fits := len(c.buf)+len(p) <= maxGather; c.writing || fits && c.holds > 0 {
		c.gather(p) // written by the write under way, or on release
		return len(p), nil
	} else if fits {
		c.gather(p)
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	if c.holds > 0 && len(p) <= maxGather {
		c.gather(p)
		return len(p), nil
	}
	c.writing = true
	c.mu.Unlock()
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	c.writing = false
	c.written.Broadcast()
	if err == nil {
		err = c.flushLocked() // what came meanwhile
	}
	return n, err
}

// hold has the writes gathered until release.
func (c *gatherConn) hold() {
	c.mu.Lock()
	c.holds++
	c.mu.Unlock()
}

// release ends a hold, and writes what was gathered when none is left.
func (c *gatherConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holds--; c.holds > 0 || c.writing {
		return nil // the hold left, or the write under way, writes it
	}
	return c.flushLocked()
}

// releaseAsync ends a hold as release does, but what was gathered is
// written by a goroutine of its own: the caller goes on (reads the next
// of a response's body) meanwhile. A failed write's error is the next
// Write's, releaseAsync's or wait's.
func (c *gatherConn) releaseAsync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holds--; c.holds > 0 || c.writing || c.buf == nil {
		return c.err
	}
	c.writing = true
	go func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.writing = false
		if err := c.flushLocked(); err != nil && c.err == nil {
			c.err = err
		}
	}()
	return nil
}

// wait waits for the writes under way to end, and returns the error of
// one that failed.
func (c *gatherConn) wait() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.writing {
		c.written.Wait()
	}
	return c.err
}

// flushLocked writes what is gathered, mu unlocked meanwhile, until
// nothing is left; none is under way (writing is false).
func (c *gatherConn) flushLocked() error {
	for c.buf != nil {
		out := c.buf
		c.buf = nil
		c.writing = true
		c.mu.Unlock()
		_, err := c.Conn.Write(out)
		c.mu.Lock()
		c.writing = false
		c.written.Broadcast()
		out = out[:0]
		gatherBufs.Put(&out)
		if err != nil {
			return err
		}
	}
	return nil
}

// A gatherWriter is a response writer whose each Write holds g, so that
// the records of one write go out in one, written while the handler goes
// on (releaseAsync): the handler waits for them (g.wait) before it ends.
type gatherWriter struct {
	http.ResponseWriter
	g *gatherConn
}

func (w gatherWriter) Write(p []byte) (int, error) {
	w.g.hold()
	n, err := w.ResponseWriter.Write(p)
	if rerr := w.g.releaseAsync(); err == nil {
		err = rerr
	}
	return n, err
}

// Unwrap is for http.ResponseController: Flush, Hijack and the like.
func (w gatherWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
