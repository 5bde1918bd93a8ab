package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync/atomic"
	"time"
)

// serveHTTP serves an HTTP proxy request on c, whose bytes br reads.
func (srv *server) serveHTTP(ctx context.Context, c *conn, br *bufio.Reader, busy bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		switch {
		case c.limit == 0 || errors.Is(err, errHeaderTooLarge):
			srv.httpError(c, http.StatusRequestHeaderFieldsTooLarge, "boxsh: request header too large (the proxy takes at most 64 KiB).")
		case isTimeout(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed):
			// Gone or too slow: nothing to say.
		default:
			srv.httpError(c, http.StatusBadRequest, "boxsh: malformed HTTP proxy request.")
		}
		return
	}
	c.limit = -1
	switch {
	case busy:
		srv.httpError(c, http.StatusServiceUnavailable,
			fmt.Sprintf("boxsh: the network proxy is busy (%d connections at once); try again later.", srv.MaxConns))
	case req.Method == http.MethodConnect:
		srv.connect(ctx, c, br, req)
	default:
		srv.forward(ctx, c, br, req)
	}
}

// connect serves CONNECT host:port: a tunnel.
func (srv *server) connect(ctx context.Context, c *conn, br *bufio.Reader, req *http.Request) {
	host, portText, err := net.SplitHostPort(req.URL.Host)
	port, perr := parsePort(portText)
	if err != nil || perr != nil || host == "" || req.URL.Path != "" {
		srv.httpError(c, http.StatusBadRequest, "boxsh: CONNECT takes host:port.")
		return
	}
	d := srv.decideWith(ctx, c, host, port, "connect", func(d *decision) { srv.opaque(d) })
	if !d.allowed {
		srv.refuse(c, d)
		return
	}
	if srv.terminates(d.host, d.port) {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(srv.HeaderTimeout))
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		pending, _ := br.Peek(br.Buffered())
		srv.terminate(ctx, c, pending, d, "connect")
		return
	}
	up, closeUp, err := srv.dial(ctx, d, "connect")
	if err != nil {
		srv.httpError(c, gatewayStatus(err), "boxsh: cannot "+err.Error()+".")
		return
	}
	defer closeUp()
	_ = c.Conn.SetWriteDeadline(time.Now().Add(srv.HeaderTimeout))
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent ahead of the reply (a TLS hello) go first.
	pending, _ := br.Peek(br.Buffered())
	tunnel(c, up, pending, srv.IdleTimeout)
}

// forward serves a plain HTTP request in absolute form: it sends it to
// the origin, and the response back with "Connection: close". A GET may go
// over an idle connection an earlier request to the same destination left
// (see idlePool); any other request goes over a new connection, with
// "Connection: close".
func (srv *server) forward(ctx context.Context, c *conn, br *bufio.Reader, req *http.Request) {
	u := req.URL
	if !u.IsAbs() || u.Host == "" {
		srv.httpError(c, http.StatusBadRequest, "boxsh: this is a proxy: it takes requests for absolute URLs (GET http://host/path) and CONNECT host:port.")
		return
	}
	if u.Scheme != "http" {
		srv.httpError(c, http.StatusBadRequest, fmt.Sprintf("boxsh: the proxy forwards only http:// URLs, not %s://; use CONNECT for https.", u.Scheme))
		return
	}
	port := 80
	if p := u.Port(); p != "" {
		var err error
		if port, err = parsePort(p); err != nil {
			srv.httpError(c, http.StatusBadRequest, "boxsh: "+err.Error()+".")
			return
		}
	}
	d := srv.decideWith(ctx, c, u.Hostname(), port, "http", func(d *decision) { srv.inspect(d, "http", req) })
	if !d.allowed {
		srv.refuse(c, d)
		return
	}
	removeHopByHop(req.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // add none of Go's
	}
	// A GET without a body may go over an idle connection to the same
	// destination, and leave its own for the next (see idlePool). A
	// destination allowed by an answer, not a rule, gets a connection of
	// its own each time.
	reuse := req.Method == http.MethodGet && req.Body == http.NoBody && !d.answered
	req.Close = !reuse
	key := destKey(d.host, d.port)
	last := new(atomic.Int64)
	c.keepAlive(srv.IdleTimeout, last)

	var ic *idleConn
	if reuse {
		ic = srv.idle.get(key)
	}
	for {
		reused := ic != nil
		if !reused {
			raw, stop, err := srv.dialRaw(ctx, d, "http")
			if err != nil {
				srv.httpError(c, gatewayStatus(err), "boxsh: cannot "+err.Error()+".")
				return
			}
			ic = &idleConn{c: raw, close: func() { stop(); raw.Close() }}
		}
		if !srv.exchange(c, ic, d, req, key, reuse, reused, last) {
			return
		}
		// The origin closed the idle connection as the request went out:
		// a GET goes again, once, on a new connection.
		ic = nil
	}
}

// exchange sends req over ic to the destination d, and the response back
// to c. Then it closes c, and ic, or keeps ic in the pool under key when
// reuse allows and the exchange left it clean.
//
// When ic was reused and failed before any of the response arrived, it
// closes ic but not c, which has had no answer, and reports it (retry).
func (srv *server) exchange(c *conn, ic *idleConn, d decision, req *http.Request, key string, reuse, reused bool, last *atomic.Int64) (retry bool) {
	untrack := srv.track(d, ic.c)
	up := newConn(ic.c)
	up.keepAlive(srv.IdleTimeout, last)

	sent := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(up)
		err := req.Write(w)
		if err == nil {
			err = w.Flush()
		}
		sent <- err
	}()
	// The request goes out meanwhile. Before c is closed, which req.Body
	// reads, its sender must be done: closing ic makes it fail at its next
	// write, and it gets little time if unfinished.
	finish := func(keep bool) {
		untrack()
		if keep {
			_ = ic.c.SetDeadline(time.Time{})
			srv.idle.put(key, ic)
		} else {
			ic.close()
		}
		select {
		case <-sent:
			closeGracefully(c)
		case <-time.After(lingerTimeout):
			c.Close()
			<-sent
		}
	}

	up.limit = maxHeaderBytes
	br := bufReaders.Get().(*bufio.Reader)
	br.Reset(up)
	defer func() { br.Reset(nil); bufReaders.Put(br) }()
	resp, err := srv.readResponse(c, br, req)
	if err != nil {
		if reused && up.limit == maxHeaderBytes {
			untrack()
			ic.close()
			<-sent
			return true
		}
		srv.Log.Debug("no response upstream", "host", d.host, "port", d.port, "error", err)
		msg := fmt.Sprintf("boxsh: no valid response from %s: %v.", req.URL.Host, err)
		if up.limit == 0 {
			msg = fmt.Sprintf("boxsh: the response header of %s is too large.", req.URL.Host)
		}
		srv.writeError(c, gatewayStatus(err), msg)
		finish(false)
		return false
	}
	up.limit = -1
	framed := resp.ContentLength >= 0 || (len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked")
	keep := reuse && !resp.Close && resp.ProtoAtLeast(1, 1) && framed
	removeHopByHop(resp.Header)
	resp.Close = true
	if cd, ud := tcpOf(c.Conn), tcpOf(ic.c); cd != nil && ud != nil && spliceable(req, resp) {
		err = spliceResponse(c, up, cd, ud, br, resp)
	} else {
		// Large buffers: the body is copied through w, a write of it each.
		w := bufWriters.Get().(*bufio.Writer)
		w.Reset(c)
		err = resp.Write(w)
		if err == nil {
			err = w.Flush()
		}
		w.Reset(nil)
		bufWriters.Put(w)
		resp.Body.Close()
	}
	if err != nil {
		srv.Log.Debug("forwarding the response failed", "host", d.host, "port", d.port, "error", err)
		c.Close()
		keep = false
	}
	if keep {
		// Only a connection that sent the whole request and nothing
		// past the response carries another.
		err := <-sent
		keep = err == nil && br.Buffered() == 0
		sent <- err
	}
	finish(keep)
	return false
}

// spliceMinBody is the smallest body spliceResponse splices: a smaller one
// goes in the writes of the header.
const spliceMinBody = 64 << 10

// spliceable tells whether resp, the response to req, has a body of a length
// it states, large enough for spliceResponse, which nothing rewrites.
func spliceable(req *http.Request, resp *http.Response) bool {
	return resp.ContentLength >= spliceMinBody && len(resp.TransferEncoding) == 0 && resp.Trailer == nil && !resp.Uncompressed &&
		req.Method != http.MethodHead && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
}

// errHeadWritten ends resp.Write once it has written a response's header.
var errHeadWritten = errors.New("proxy: header written")

// headOnly is a body whose first read ends Response.Write, after the header.
type headOnly struct{}

func (headOnly) Read([]byte) (int, error) { return 0, errHeadWritten }
func (headOnly) Close() error             { return nil }

// spliceResponse writes resp to c, cd its TCP connection: the header as
// resp.Write writes it, then the body, the bytes br read ahead first, the
// rest spliced from ud, up's TCP connection (see spliceConns). It leaves in
// br what br read past the body.
func spliceResponse(c, up *conn, cd, ud *net.TCPConn, br *bufio.Reader, resp *http.Response) error {
	w := bufWriters.Get().(*bufio.Writer)
	defer func() { w.Reset(nil); bufWriters.Put(w) }()
	w.Reset(c)
	head := *resp
	head.Body = headOnly{}
	if err := head.Write(w); !errors.Is(err, errHeadWritten) {
		if err == nil {
			err = errors.New("proxy: the response's body was not read")
		}
		return err
	}
	ahead := min(int64(br.Buffered()), resp.ContentLength)
	b, _ := br.Peek(int(ahead))
	if _, err := w.Write(b); err != nil {
		return err
	}
	_, _ = br.Discard(int(ahead))
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := spliceConns(c, up, cd, ud, resp.ContentLength-ahead)
	return err
}

// readResponse reads the response to req from r, and passes interim
// (1xx) responses on to c.
func (srv *server) readResponse(c *conn, r *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(r, req)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("a protocol switch, which the proxy does not forward")
		case resp.StatusCode >= 200:
			return resp, nil
		}
		removeHopByHop(resp.Header)
		w := bufio.NewWriter(c)
		fmt.Fprintf(w, "HTTP/%d.%d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
		_ = resp.Header.Write(w)
		_, _ = io.WriteString(w, "\r\n")
		if err := w.Flush(); err != nil {
			return nil, err
		}
	}
}

// hopHeaders are the hop-by-hop headers (RFC 9110, 7.6.1) the proxy
// does not pass on, besides those Connection names and Proxy-*.
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
	for name := range h {
		if strings.HasPrefix(name, "Proxy-") {
			delete(h, name)
		}
	}
}

// httpError answers the request on c with status code and the text msg,
// and closes c.
func (srv *server) httpError(c *conn, code int, msg string) {
	srv.writeError(c, code, msg)
	closeGracefully(c)
}

// refuse answers 403 to the request for the destination d refused.
//
// The reason is both the status text, because a client that fails a CONNECT
// shows only the status line, and, longer, the body.
func (srv *server) refuse(c *conn, d decision) {
	srv.writeStatus(c, http.StatusForbidden, shortRefusal(d), srv.refusal(d))
	closeGracefully(c)
}

// writeError answers the request on c with status code and the text msg.
func (srv *server) writeError(c *conn, code int, msg string) {
	srv.writeStatus(c, code, http.StatusText(code), msg)
}

// writeStatus answers the request on c with status code, the status text
// reason and the text msg.
func (srv *server) writeStatus(c *conn, code int, reason, msg string) {
	body := msg + "\n"
	if c.idle == 0 { // else Write sets its own deadline
		_ = c.Conn.SetWriteDeadline(time.Now().Add(srv.HeaderTimeout))
	}
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, statusText(reason), len(body), body)
}

// statusText is reason made safe for a status line: printable ASCII.
func statusText(reason string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f {
			return '?'
		}
		return r
	}, reason)
}

// gatewayStatus is the status for an upstream failure err.
func gatewayStatus(err error) int {
	if classify(err) == failTimeout {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}
