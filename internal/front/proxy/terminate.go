package proxy

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A CA is the certificate authority of the certificates the proxy shows
// where it terminates TLS. Its key is kept in memory only.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// caLifetime is how long a CA and its certificates are valid.
const caLifetime = 400 * 24 * time.Hour

// NewCA makes a CA named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"boxsh"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), leaves: map[string]*tls.Certificate{}}, nil
}

// CertPEM is the CA's certificate, PEM-encoded: what the sandbox trusts.
func (ca *CA) CertPEM() []byte { return bytes.Clone(ca.pem) }

// maxLeaves bounds the certificates a CA keeps.
const maxLeaves = 1024

// leaf is the certificate the proxy shows for host, made once.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}
	if len(ca.leaves) >= maxLeaves {
		clear(ca.leaves)
	}
	ca.leaves[host] = c
	return c, nil
}

// serial is a random certificate serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// terminates tells whether the proxy terminates TLS to host and port: a
// secret is for them or a request rule names them, and there is a CA to
// show certificates of.
func (srv *server) terminates(host string, port int) bool {
	return srv.hasCA() && (len(srv.Secrets.namesFor(host, port)) > 0 || srv.Requests.has(host, port))
}

// hasCA tells whether the proxy has a CA to terminate TLS with.
func (srv *server) hasCA() bool { return srv.Secrets != nil && srv.Secrets.CA != nil }

// opaque refuses a tunnel to host and port when request rules name them
// and the proxy cannot terminate TLS to see the requests (no CA), so that
// no rule is gone around.
func (srv *server) opaque(d *decision) bool {
	if srv.hasCA() || !srv.Requests.has(d.host, d.port) {
		return false
	}
	d.allowed = false
	d.request = &RequestRefusal{Method: "CONNECT", Path: "/", Rules: srv.Requests.of(d.host, d.port)}
	return true
}

// inspect decides on request r to the destination d allowed: the request
// rules by its method and path, then the secrets put in.
func (srv *server) inspect(d *decision, scheme string, r *http.Request) {
	d.scheme = scheme
	if d.request = srv.Requests.Check(d.host, d.port, r.Method, r.URL.Path); d.request != nil {
		d.allowed = false
		return
	}
	if d.secrets, d.leak = srv.Secrets.PutRequest(r.Method, d.host, d.port, r.Header, r.URL); d.leak != nil {
		d.allowed = false
	}
}

// firstByteTimeout bounds the wait for a client's first bytes in a
// tunnel the proxy may terminate: a client that waits for the server to
// speak first then gets the tunnel untouched.
const firstByteTimeout = 2 * time.Second

// maxMethodLen bounds the method a request line may start with.
const maxMethodLen = 16

// sniff reads the first bytes the client sends in its tunnel (after
// pending), and tells what they start: TLS, a plain HTTP request, or
// something else (ssh, a server-speaks-first protocol's silence).
func sniff(c *conn, pending []byte) (head []byte, kind string) {
	head = bytes.Clone(pending)
	_ = c.Conn.SetReadDeadline(time.Now().Add(firstByteTimeout))
	defer func() { _ = c.Conn.SetReadDeadline(time.Time{}) }()
	var b [1]byte
	for len(head) <= maxMethodLen {
		if len(head) > 0 {
			switch first := head[0]; {
			case first == 0x16: // a TLS handshake record
				return head, "tls"
			case first < 'A' || first > 'Z':
				return head, "other"
			case head[len(head)-1] == ' ':
				return head, "http"
			case len(head) > 1 && (head[len(head)-1] < 'A' || head[len(head)-1] > 'Z'):
				return head, "other"
			}
		}
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return head, "other"
		}
		head = append(head, b[0])
	}
	return head, "other"
}

// terminate serves the client's tunnel c to the destination d, already
// granted, after pending, when it starts with TLS or a plain HTTP request:
// over TLS with a certificate of the proxy's CA. It forwards each request
// to d (over TLS of its own, verified against the roots of Secrets, when
// the client's was) with the rules applied and the secrets put in. Other
// bytes (ssh, say) go through the tunnel untouched.
func (srv *server) terminate(ctx context.Context, c *conn, pending []byte, d decision, protocol string) {
	head, kind := sniff(c, pending)
	if kind == "other" && srv.Requests.has(d.host, d.port) {
		// Its rules decide requests: bytes that are none go nowhere.
		d.allowed = false
		d.request = &RequestRefusal{Method: "(not HTTP)", Path: "/", Rules: srv.Requests.of(d.host, d.port)}
		srv.record(d, protocol, false, 0)
		return
	}
	if kind == "other" {
		up, closeUp, err := srv.dial(ctx, d, protocol)
		if err != nil {
			return
		}
		defer closeUp()
		tunnel(c, up, head, srv.IdleTimeout)
		return
	}
	if kind == "http" {
		srv.serveInspected(ctx, &prefixConn{Conn: c, pending: head}, d, protocol, nil)
		return
	}
	names := srv.Secrets.namesFor(d.host, d.port)
	gc := newGatherConn(&prefixConn{Conn: c, pending: head})
	tc := tls.Server(gc, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		// The client is on this machine: records of the largest size from
		// the first, not grown from one TCP segment over the first 128 KiB
		// of the connection.
		DynamicRecordSizingDisabled: true,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" && normalizeName(hello.ServerName) != d.host {
				return nil, fmt.Errorf("the TLS server name %q is not %s, the tunnel's", hello.ServerName, d.host)
			}
			return srv.Secrets.CA.leaf(d.host)
		},
	})
	_ = c.Conn.SetDeadline(time.Now().Add(srv.HeaderTimeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		if !errors.Is(err, io.EOF) && !isTimeout(err) {
			srv.tlsRefused(d, names, err)
		}
		_ = tc.Close()
		return
	}
	_ = c.Conn.SetDeadline(time.Time{})
	srv.serveInspected(ctx, tc, d, protocol, gc)
}

// serveInspected serves the HTTP requests of the client's connection cc to
// d: each is decided (inspect), then forwarded to d over a connection of
// the proxy's own. With gc, the connection under cc's TLS, the client's is
// HTTPS and so is the proxy's, with TLS verified, and each response is
// moved a buffer at a time rather than a record (see recordReader).
func (srv *server) serveInspected(ctx context.Context, cc net.Conn, d decision, protocol string, gc *gatherConn) {
	addr := net.JoinHostPort(d.host, strconv.Itoa(d.port))
	secure := gc != nil
	scheme := "http"
	if secure {
		scheme = "https"
	}
	rt := &recordTransport{}
	up := &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			raw, closeUp, err := srv.dial(ctx, d, protocol)
			if err != nil {
				return nil, err
			}
			return &closingConn{Conn: raw, close: closeUp}, nil
		},
		DialTLSContext: func(reqCtx context.Context, _, _ string) (net.Conn, error) {
			// The tunnel's context, not the request's: the connection
			// outlives the request, for the next ones to reuse.
			raw, closeUp, err := srv.dial(ctx, d, protocol)
			if err != nil {
				return nil, err
			}
			closing := &closingConn{Conn: raw}
			rec := newRecordReader(closing)
			uc := tls.Client(rec, &tls.Config{ServerName: d.host, RootCAs: srv.Secrets.Roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
			remove := rt.add(uc, rec)
			closing.close = func() { remove(); closeUp() }
			if err := uc.HandshakeContext(reqCtx); err != nil {
				uc.Close()
				return nil, fmt.Errorf("TLS to %s: %w", addr, err)
			}
			return uc, nil
		},
		MaxIdleConnsPerHost:   1,
		IdleConnTimeout:       srv.IdleTimeout,
		ResponseHeaderTimeout: srv.IdleTimeout,
	}
	defer up.CloseIdleConnections()
	var transport http.RoundTripper = up
	if secure {
		rt.RoundTripper, transport = up, rt
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = scheme, addr
			pr.Out.Host = pr.In.Host
		},
		Transport:     transport,
		BufferPool:    copyBufPool{},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			srv.Log.Debug("no response upstream", "host", d.host, "port", d.port, "error", err)
			http.Error(w, fmt.Sprintf("boxsh: no valid response from %s: %v.", addr, err), gatewayStatus(err))
		},
	}
	// A protocol switch (101) hijacks cc: the handler copies both ways
	// after hs.Serve has returned, until either end closes.
	var switched sync.WaitGroup
	var hijacked atomic.Bool
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if hijacked.Load() {
				switched.Done()
			}
		}()
		r.URL.Scheme, r.URL.Host = scheme, addr
		rd := d
		srv.inspect(&rd, scheme, r)
		srv.record(rd, scheme, false, 0)
		if !rd.allowed {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, srv.refusal(rd)+"\n")
			return
		}
		if gc != nil {
			w = gatherWriter{ResponseWriter: w, g: gc}
		}
		rp.ServeHTTP(w, r)
		if gc != nil {
			// The response's last bytes are written before net/http ends it.
			_ = gc.wait()
		}
	})
	ln := newOneConnListener(cc)
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: srv.HeaderTimeout,
		IdleTimeout:       srv.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateHijacked {
				// In the handler's Hijack, before hs.Serve can return.
				switched.Add(1)
				hijacked.Store(true)
			}
			if s == http.StateClosed || s == http.StateHijacked {
				ln.Close()
			}
		},
	}
	stop := context.AfterFunc(ctx, func() { _ = hs.Close() })
	defer stop()
	_ = hs.Serve(ln)
	switched.Wait()
}

// tlsRefused tells that the client refused the certificate of d, which
// the proxy terminates for the secrets names: a refusal, as the model
// must learn why its request failed.
func (srv *server) tlsRefused(d decision, names []string, err error) {
	reason := fmt.Sprintf("TLS to %s is terminated by boxsh's proxy for the secret %s, and the client refused its certificate (%v): a client that pins certificates or ignores SSL_CERT_FILE cannot use the secret", d.host, strings.Join(names, ", "), err)
	srv.Log.Warn(reason)
	if srv.Decided != nil {
		srv.Decided(Decision{Host: d.host, Port: d.port, Protocol: "https", Allowed: false, Reason: reason})
	}
}

// namesFor are the names of the secrets for host and port.
func (s *Secrets) namesFor(host string, port int) []string {
	var names []string
	for i := range s.list {
		if s.list[i].isFor(host, port) {
			names = append(names, s.list[i].Name)
		}
	}
	return names
}

// copyBufPool lends httputil.ReverseProxy the tunnels' copy buffers.
type copyBufPool struct{}

func (copyBufPool) Get() []byte  { return *copyBufs.Get().(*[]byte) }
func (copyBufPool) Put(b []byte) { copyBufs.Put(&b) }

// closingConn is a connection closed by close (once), which also ends
// what dial set up for it.
type closingConn struct {
	net.Conn
	close func()
	once  sync.Once
}

func (c *closingConn) Close() error {
	c.once.Do(c.close)
	return nil
}

// prefixConn is a connection whose first bytes read are pending.
//
// A deadline it reaches is os.ErrDeadlineExceeded, which is temporary: a
// yamux stream's is not, and crypto/tls takes an error that is not for the
// end of the connection, so that net/http's wait for the next request
// (ended by a deadline in the past) would close it.
type prefixConn struct {
	net.Conn
	pending []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	n, err := c.Conn.Read(p)
	return n, deadlineError(err)
}

func (c *prefixConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, deadlineError(err)
}

// deadlineError is err, or os.ErrDeadlineExceeded for a timeout.
func deadlineError(err error) error {
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return os.ErrDeadlineExceeded
	}
	return err
}

// oneConnListener accepts one connection, then waits until closed.
type oneConnListener struct {
	c      net.Conn
	once   sync.Once
	closed chan struct{}
	mu     sync.Mutex
	taken  bool
}

func newOneConnListener(c net.Conn) *oneConnListener {
	return &oneConnListener{c: c, closed: make(chan struct{})}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.taken {
		l.taken = true
		l.mu.Unlock()
		return l.c, nil
	}
	l.mu.Unlock()
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }
