package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkConn is a connection whose reads return its chunks, one each, and
// then io.EOF.
type chunkConn struct {
	net.Conn
	chunks [][]byte
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// record is a TLS record of the content type typ with a body of n bytes
// of b.
func record(typ byte, n int, b byte) []byte {
	return append([]byte{typ, 3, 3, byte(n >> 8), byte(n)}, bytes.Repeat([]byte{b}, n)...)
}

// A recordReader returns a record at most a Read (an alert that has come
// behind one with it), and tells whether the next has come whole and is
// large enough to be data.
func TestRecordReader(t *testing.T) {
	a, b, c := record(23, 16384, 'a'), record(23, 100, 'b'), record(23, 5000, 'c')
	alert := record(recordTypeAlert, 2, 'z')
	type read struct {
		data []byte
		next bool
	}
	for _, tc := range []struct {
		name   string
		chunks [][]byte
		want   []read
	}{
		{"all come", [][]byte{bytes.Join([][]byte{a, c, a}, nil)}, []read{{a, true}, {c, true}, {a, false}}},
		{"one at a time", [][]byte{a, b, c}, []read{{a, false}, {b, false}, {c, false}}},
		{"the next in part", [][]byte{slices.Concat(a, b[:3]), b[3:], c}, []read{{a, false}, {b, false}, {c, false}}},
		{"the next's header in part", [][]byte{slices.Concat(b, c[:4]), c[4:]}, []read{{b, false}, {c, false}}},
		{"a small record next", [][]byte{bytes.Join([][]byte{a, b, a}, nil)}, []read{{a, false}, {b, true}, {a, false}}},
		{"an alert behind", [][]byte{bytes.Join([][]byte{b, alert, c}, nil)}, []read{{slices.Concat(b, alert), true}, {c, false}}},
		{"an alert in part", [][]byte{slices.Concat(b, alert[:6]), alert[6:]}, []read{{b, false}, {alert[:6], false}, {alert[6:], false}}},
		{"not TLS", [][]byte{[]byte("SSH")}, []read{{[]byte("SSH"), false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var chunks [][]byte
			for _, c := range tc.chunks {
				chunks = append(chunks, bytes.Clone(c))
			}
			r := newRecordReader(&chunkConn{chunks: chunks})
			p := make([]byte, 64<<10)
			for i, w := range tc.want {
				n, err := r.Read(p)
				require.NoError(t, err, "read %d", i)
				assert.Equal(t, w.data, p[:n], "read %d", i)
				assert.Equal(t, w.next, r.next.Load(), "read %d: next", i)
			}
			_, err := r.Read(p)
			assert.ErrorIs(t, err, io.EOF)
		})
	}

	// A small buffer gets a record in parts.
	r := newRecordReader(&chunkConn{chunks: [][]byte{bytes.Join([][]byte{b, a}, nil)}})
	var got []byte
	p := make([]byte, 1000)
	for {
		n, err := r.Read(p)
		got = append(got, p[:n]...)
		if err != nil {
			break
		}
		require.LessOrEqual(t, len(got), len(a)+len(b))
		if len(got) == len(b) {
			assert.True(t, r.next.Load(), "a has come")
		} else {
			assert.False(t, r.next.Load(), "in a record")
		}
	}
	assert.Equal(t, slices.Concat(b, a), got)
}

// writeLog is a connection that records each write, each made to wait
// until let has a value when let is not nil.
type writeLog struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
	let    chan struct{}
	closed chan struct{}
	once   sync.Once
}

func newWriteLog() *writeLog { return &writeLog{closed: make(chan struct{})} }

func (w *writeLog) Write(p []byte) (int, error) {
	if w.let != nil {
		select {
		case <-w.let:
		case <-w.closed:
			return 0, net.ErrClosed
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func (w *writeLog) Close() error {
	w.once.Do(func() { close(w.closed) })
	return nil
}

func (w *writeLog) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var s []string
	for _, b := range w.writes {
		s = append(s, string(b))
	}
	return s
}

// A gatherConn writes what it is given while held in one write on
// release; what it is given otherwise goes as it comes.
func TestGatherConn(t *testing.T) {
	w := newWriteLog()
	g := newGatherConn(w)
	write := func(s string) {
		n, err := g.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, len(s), n)
	}
	write("a")
	g.hold()
	write("b")
	write("c")
	g.hold()
	write("d")
	require.NoError(t, g.release())
	assert.Equal(t, []string{"a"}, w.got(), "held")
	require.NoError(t, g.release())
	write("e")
	assert.Equal(t, []string{"a", "bcd", "e"}, w.got())

	// More than maxGather while held: written as it fills.
	w = newWriteLog()
	g = newGatherConn(w)
	big := bytes.Repeat([]byte("x"), maxGather/3+1)
	g.hold()
	for range 3 {
		_, err := g.Write(big)
		require.NoError(t, err)
	}
	assert.Len(t, w.got(), 1)
	require.NoError(t, g.release())
	assert.Equal(t, []int{2 * len(big), len(big)}, lens(w.got()))
	huge := bytes.Repeat([]byte("y"), maxGather+1)
	g.hold()
	_, err := g.Write(huge)
	require.NoError(t, err)
	require.NoError(t, g.release())
	assert.Equal(t, []int{2 * len(big), len(big), len(huge)}, lens(w.got()))
}

func lens(s []string) []int {
	var n []int
	for _, x := range s {
		n = append(n, len(x))
	}
	return n
}

// While a release's write waits (a client that does not read), a record
// written (tls.Conn's Close alert) is queued behind it rather than waiting,
// and Close ends the write.
func TestGatherConnReleaseBlocked(t *testing.T) {
	w := newWriteLog()
	w.let = make(chan struct{})
	g := newGatherConn(w)
	g.hold()
	_, err := g.Write([]byte("body"))
	require.NoError(t, err)
	released := make(chan error, 1)
	go func() { released <- g.release() }()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.writing
	}, testTimeout, time.Millisecond, "the release's write under way")
	wrote := make(chan error, 1)
	go func() {
		_, err := g.Write([]byte("alert"))
		wrote <- err
	}()
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatal("a write waited for the release's")
	}

	// Let the release's write go: the alert follows it.
	w.let <- struct{}{}
	w.let <- struct{}{}
	require.NoError(t, <-released)
	assert.Equal(t, []string{"body", "alert"}, w.got())

	// Blocked again: Close ends it.
	g.hold()
	_, err = g.Write([]byte("more"))
	require.NoError(t, err)
	go func() { released <- g.release() }()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.writing
	}, testTimeout, time.Millisecond)
	require.NoError(t, g.Close())
	select {
	case err := <-released:
		assert.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(testTimeout):
		t.Fatal("Close did not end the release's write")
	}
}

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// terminating serves a proxy that terminates TLS to example.com, reached
// at origin, on a loopback listener that counts its writes; it returns
// the proxy's address and a client of it that trusts its CA.
func terminating(t *testing.T, origin *httptest.Server) (*countingListener, *http.Client) {
	t.Helper()
	tok := Secret{Name: "TOKEN", Value: "tok_0123456789abcdefghij", Hosts: []string{"example.com"}}
	var err error
	tok.StandIn, err = NewStandIn(tok.Value)
	require.NoError(t, err)
	set, err := NewSecrets([]Secret{tok})
	require.NoError(t, err)
	set.CA, err = NewCA("boxsh test CA")
	require.NoError(t, err)
	set.Roots = x509.NewCertPool()
	set.Roots.AddCert(origin.Certificate())
	w := world{"example.com:443": origin.Listener.Addr().String()}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cl := &countingListener{Listener: l}
	rules, err := NewRules([]string{"example.com"}, nil)
	require.NoError(t, err)
	srv := &Server{Dial: w.dial, Secrets: set, Rules: rules}
	serveProxy(t, srv, cl)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(set.CA.CertPEM()))
	return cl, &http.Client{Timeout: testTimeout, Transport: &http.Transport{
		Proxy:           http.ProxyURL(must(t, "http://"+l.Addr().String())),
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
}

// A large response through a terminated tunnel arrives whole, in writes
// of many records each, by Content-Length or chunked.
func TestTerminateLargeResponse(t *testing.T) {
	const size = 8<<20 + 12345
	body := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/length" {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		for b := body; len(b) > 0; {
			n := min(len(b), 100_000)
			_, _ = w.Write(b[:n])
			b = b[n:]
		}
	}))
	origin.Config.ErrorLog = log.New(io.Discard, "", 0)
	origin.StartTLS()
	t.Cleanup(origin.Close)
	cl, client := terminating(t, origin)
	for _, path := range []string{"/length", "/chunked"} {
		before := cl.writes.Load()
		resp, err := client.Get("https://example.com" + path)
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, "boxsh test CA", resp.TLS.PeerCertificates[0].Issuer.CommonName)
		require.True(t, bytes.Equal(body, got), "%s: the body arrives whole (%d bytes of %d)", path, len(got), size)
		// A record a write would be size/16 KiB of them.
		writes := cl.writes.Load() - before
		assert.Less(t, writes, int64(size/(16<<10)/2), "%s: records gathered in writes", path)
	}
}

// A response that comes in parts reaches the client part by part: the
// proxy does not wait for more than has come to pass it on, though the
// part is many records, by Content-Length or chunked.
func TestTerminateStreams(t *testing.T) {
	const part = 50_000
	const parts = 4
	next := make(chan struct{})
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/length" {
			w.Header().Set("Content-Length", strconv.Itoa(part*parts))
		}
		for i := range parts {
			if i > 0 {
				select {
				case <-next: // the client has the part before
				case <-r.Context().Done():
					return
				}
			}
			_, _ = w.Write(bytes.Repeat([]byte{byte('a' + i)}, part))
			w.(http.Flusher).Flush()
		}
	}))
	origin.Config.ErrorLog = log.New(io.Discard, "", 0)
	origin.StartTLS()
	t.Cleanup(origin.Close)
	_, client := terminating(t, origin)
	for _, path := range []string{"/length", "/chunked"} {
		resp, err := client.Get("https://example.com" + path)
		require.NoError(t, err)
		for i := range parts {
			got := make([]byte, part)
			_, err := io.ReadFull(resp.Body, got)
			require.NoError(t, err, "%s: part %d", path, i)
			require.Equal(t, bytes.Repeat([]byte{byte('a' + i)}, part), got, "%s: part %d", path, i)
			if i < parts-1 {
				next <- struct{}{}
			}
		}
		rest, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Empty(t, rest)
		resp.Body.Close()
	}
}

// A protocol switch (101) through a terminated tunnel: the bytes go both
// ways after it (the tunnel ended with the switch before), until either
// end closes or the proxy ends.
func TestTerminateUpgrade(t *testing.T) {
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "no upgrade", http.StatusBadRequest)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		if brw.Flush() != nil {
			return
		}
		_, _ = io.Copy(c, brw)
	}))
	origin.Config.ErrorLog = log.New(io.Discard, "", 0)
	origin.StartTLS()
	t.Cleanup(origin.Close)
	_, client := terminating(t, origin)
	req, err := http.NewRequest(http.MethodGet, "https://example.com/echo", nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := client.Transport.RoundTrip(req) // the Client's Timeout wraps the body
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	rw, ok := resp.Body.(io.ReadWriteCloser)
	require.True(t, ok)
	defer rw.Close()
	br := bufio.NewReader(rw)
	for _, line := range []string{"ping\n", string(bytes.Repeat([]byte("p"), 100_000)) + "\n"} {
		_, err := io.WriteString(rw, line)
		require.NoError(t, err)
		got, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, line, got)
	}

	// One left open: the proxy's end (the test's cleanup) ends it too.
	req, err = http.NewRequest(http.MethodGet, "https://example.com/echo", nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	open, err := client.Transport.RoundTrip(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, open.StatusCode)
}

// recordCountingConn counts the TLS records of application data of the
// largest size (16 KiB of plaintext) read from a connection to a proxy,
// after the proxy's answer to CONNECT.
type recordCountingConn struct {
	net.Conn
	mu      sync.Mutex
	tunnel  bool   // the answer to CONNECT has been read
	pending []byte // read, not yet parsed
	full    int    // application data records of 16 KiB
}

func (c *recordCountingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, p[:n]...)
	if !c.tunnel {
		i := bytes.Index(c.pending, []byte("\r\n\r\n"))
		if i < 0 {
			return n, err
		}
		c.tunnel, c.pending = true, c.pending[i+4:]
	}
	for len(c.pending) >= recordHeaderLen {
		length := int(c.pending[3])<<8 | int(c.pending[4])
		if len(c.pending) < recordHeaderLen+length {
			break
		}
		if c.pending[0] == 23 && length >= 16<<10 {
			c.full++
		}
		c.pending = c.pending[recordHeaderLen+length:]
	}
	return n, err
}

func (c *recordCountingConn) records() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.full
}

// A terminated tunnel writes records of the largest size from the start
// of the connection, not grown from one TCP segment over its first 128
// KiB: the client is on the same machine.
func TestTerminateFullRecords(t *testing.T) {
	const size = 64 << 10
	body := bytes.Repeat([]byte("r"), size)
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		_, _ = w.Write(body)
	}))
	origin.Config.ErrorLog = log.New(io.Discard, "", 0)
	// The origin's records full too: the proxy passes on what has come.
	origin.TLS = &tls.Config{DynamicRecordSizingDisabled: true}
	origin.StartTLS()
	t.Cleanup(origin.Close)
	_, client := terminating(t, origin)
	dialed := make(chan *recordCountingConn, 1)
	client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		rc := &recordCountingConn{Conn: c}
		dialed <- rc
		return rc, nil
	}
	resp, err := client.Get("https://example.com/big")
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "boxsh test CA", resp.TLS.PeerCertificates[0].Issuer.CommonName)
	require.Equal(t, body, got)
	// Grown from ~1.2 KiB a record, none of the first 64 KiB is full.
	assert.GreaterOrEqual(t, (<-dialed).records(), size/(16<<10)-1, "full records of the response")
}

// An asynchronous release returns before its write ends: what is written
// meanwhile goes, in order, behind it, wait waits for the last, and a
// write's failure is the next Write's and wait's error.
func TestGatherConnReleaseAsync(t *testing.T) {
	w := newWriteLog()
	w.let = make(chan struct{})
	g := newGatherConn(w)
	inWrite := func() bool { // a write under way has taken what was gathered
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.writing && g.buf == nil
	}
	g.hold()
	_, err := g.Write([]byte("one"))
	require.NoError(t, err)
	require.NoError(t, g.releaseAsync(), "returns with its write under way")
	require.Eventually(t, inWrite, testTimeout, time.Millisecond)
	g.hold()
	_, err = g.Write([]byte("two"))
	require.NoError(t, err)
	require.NoError(t, g.releaseAsync())
	_, err = g.Write([]byte("three")) // not held: behind the write under way
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() { waited <- g.wait() }()
	w.let <- struct{}{}
	require.Eventually(t, func() bool { return len(w.got()) == 1 && inWrite() }, testTimeout, time.Millisecond, "the second write under way")
	select {
	case <-waited:
		t.Fatal("wait returned with a write under way")
	default:
	}
	w.let <- struct{}{}
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatal("wait did not return once the writes ended")
	}
	assert.Equal(t, []string{"one", "twothree"}, w.got())

	// A write that fails: the next Write and wait report it, and nothing
	// is written after it.
	g.hold()
	_, err = g.Write([]byte("lost"))
	require.NoError(t, err)
	require.NoError(t, g.releaseAsync())
	require.NoError(t, w.Close())
	assert.ErrorIs(t, g.wait(), net.ErrClosed)
	_, err = g.Write([]byte("after"))
	assert.ErrorIs(t, err, net.ErrClosed)
	g.hold()
	assert.ErrorIs(t, g.releaseAsync(), net.ErrClosed)
	assert.Equal(t, []string{"one", "twothree"}, w.got())
}

// The responses of every shape come through a terminated tunnel as the
// origin sent them, each on the connection kept alive after the one
// before: by Content-Length, chunked with trailers, none for HEAD, 204 and
// 304.
func TestTerminateResponseShapes(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 40_000) // 640,000 bytes
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/length":
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body)
		case "/chunked":
			w.Header().Set("Trailer", "X-Sum")
			_, _ = w.Write(body[:100_000])
			w.(http.Flusher).Flush()
			_, _ = w.Write(body[100_000:])
			w.Header().Set("X-Sum", "all")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/same":
			w.Header().Set("ETag", `"1"`)
			w.WriteHeader(http.StatusNotModified)
		}
	}))
	origin.Config.ErrorLog = log.New(io.Discard, "", 0)
	origin.StartTLS()
	t.Cleanup(origin.Close)
	_, client := terminating(t, origin)
	var conns atomic.Int32
	client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conns.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		length       int64
		body         []byte
		trailer      string
	}{
		{"GET", "/length", 200, int64(len(body)), body, ""},
		{"HEAD", "/length", 200, int64(len(body)), nil, ""},
		{"GET", "/chunked", 200, -1, body, "all"},
		{"GET", "/empty", 204, 0, nil, ""},
		{"GET", "/same", 304, 0, nil, ""},
		{"GET", "/length", 200, int64(len(body)), body, ""},
	} {
		req, err := http.NewRequest(tc.method, "https://example.com"+tc.path, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err, "%s %s", tc.method, tc.path)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err, "%s %s", tc.method, tc.path)
		assert.Equal(t, tc.status, resp.StatusCode, "%s %s", tc.method, tc.path)
		assert.Equal(t, tc.length, resp.ContentLength, "%s %s", tc.method, tc.path)
		assert.True(t, bytes.Equal(tc.body, got), "%s %s: %d bytes of %d", tc.method, tc.path, len(got), len(tc.body))
		assert.Equal(t, tc.trailer, resp.Trailer.Get("X-Sum"), "%s %s", tc.method, tc.path)
	}
	assert.Equal(t, int32(1), conns.Load(), "one connection kept alive")
}

// A body the origin cuts short reaches the client as far as it came, and
// then its end: an unexpected EOF, not a whole body. A client that goes
// away mid-body ends the origin's request.
func TestTerminateBodyCut(t *testing.T) {
	const size = 4 << 20
	body := bytes.Repeat([]byte("c"), size)
	gone := make(chan error, 1)
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		switch r.URL.Path {
		case "/cut":
			_, _ = w.Write(body[:size/2])
			w.(http.Flusher).Flush()
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
		case "/slow":
			// Writes until the client's end ends it.
			for {
				if _, err := w.Write(body[:64<<10]); err != nil {
					gone <- err
					return
				}
			}
		}
	}))
	origin.Config.ErrorLog = log.New(io.Discard, "", 0)
	origin.StartTLS()
	t.Cleanup(origin.Close)
	_, client := terminating(t, origin)

	resp, err := client.Get("https://example.com/cut")
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Greater(t, len(got), 0, "what came before the cut")
	assert.LessOrEqual(t, len(got), size/2)
	assert.True(t, bytes.Equal(body[:len(got)], got), "the bytes that came")

	resp, err = client.Get("https://example.com/slow")
	require.NoError(t, err)
	_, err = io.ReadFull(resp.Body, make([]byte, 1<<20))
	require.NoError(t, err)
	resp.Body.Close() // the client goes away mid-body
	select {
	case err := <-gone:
		assert.Error(t, err)
	case <-time.After(testTimeout):
		t.Fatal("the origin's request went on after the client had gone")
	}

	// The proxy serves the next client.
	resp, err = client.Get("https://example.com/cut")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
