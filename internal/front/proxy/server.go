package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Defaults of the Server fields.
const (
	DefaultMaxConns      = 256
	DefaultIdleTimeout   = 5 * time.Minute
	DefaultHeaderTimeout = 10 * time.Second
	DefaultSetting       = "network.allowedDomains"
)

const (
	// dialTimeout bounds connecting upstream.
	dialTimeout = 10 * time.Second
	// maxHeaderBytes bounds a request or response header.
	maxHeaderBytes = 64 << 10
	// busySlots is how many connections beyond MaxConns get a refusal
	// rather than being closed at once.
	busySlots = 64
	// busyTimeout bounds the handshake of such a connection.
	busyTimeout = time.Second
	// connDescriptors bounds the descriptors of one connection served:
	// the sandbox's end, the upstream one and a splice's pipe each way.
	connDescriptors = 6
)

// MaxDescriptors is how many descriptors a Server whose MaxConns is
// maxConns (0 for the default) may hold at once for its connections.
func MaxDescriptors(maxConns int) int {
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	return maxConns*connDescriptors + busySlots
}

// Server serves proxy connections: HTTP proxy requests and SOCKS5 on the
// same listener. Its fields must not change once Serve has been called;
// the limits hold for each call of Serve.
type Server struct {
	// Rules decide which destinations are allowed; nil refuses all.
	Rules *Rules
	// Live, when set, holds the rules in place of Rules: they may change
	// while Serve runs, and a change closes the open connections that the
	// new rules refuse (see Live).
	Live *Live
	// Dial connects upstream (default: a net.Dialer with a 10 s timeout).
	// It gets "tcp" and the host name (or IP address) and port that Rules
	// allowed, joined by net.JoinHostPort. Tests replace it to map names
	// to local test servers.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Log gets a line per decision at Info, and upstream failures
	// (default: a null logger).
	Log hclog.Logger
	// MaxConns bounds the client connections served at once (default
	// 256). Beyond it, a connection is refused as soon as its request is
	// read (HTTP 503, SOCKS5 general failure), or, beyond 64 more, closed
	// at once; none waits for a slot.
	MaxConns int
	// IdleTimeout closes a tunnel or forwarded request that had no
	// traffic either way for this long (default 5 min).
	IdleTimeout time.Duration
	// HeaderTimeout bounds the time to read a request header or SOCKS5
	// handshake (default 10 s), so that slow clients cannot hold
	// connections for ever.
	HeaderTimeout time.Duration
	// Setting is how the user allows a domain, for refusal messages
	// (default "network.allowedDomains").
	Setting string
	// Decided, when set, is told every decision, on the connection's
	// goroutine, before the client learns it (the audit log records them).
	Decided func(Decision)
	// RuleSource, when set, names where a denied pattern was set (a
	// policy file), for the Allow of a refusal by that pattern.
	RuleSource func(rule string) string
	// Ask, when set, is asked about a destination that no rule names
	// (neither allowed nor denied, and a valid host); nil refuses it at
	// once. The request waits for the answer, at most AskTimeout; requests
	// to the same host and port meanwhile share the question. Ask must
	// return when ctx ends. Before it returns AllowSandbox, it must have
	// allowed the destination in the rules (Live) for the requests to come.
	Ask func(ctx context.Context, host string, port int) Answer
	// AskTimeout bounds the wait for Ask (default DefaultAskTimeout).
	AskTimeout time.Duration
	// Secrets, when set, are put in the plain HTTP requests to the hosts
	// they are for, in place of their stand-ins; a request carrying a
	// stand-in to another host is refused (see Secrets.Put).
	Secrets *Secrets
	// Requests, when set, decide the requests to the hosts they name by
	// method and path. Over HTTPS, that needs Secrets.CA.
	Requests *RequestRules
	// Traffic, when set, counts the bytes of the client connections.
	Traffic *Traffic
}

// A capturedConn is a client connection that a program made to a host
// name's synthetic address, captured by boxsh-init and passed to the front
// (internal/fdpass.Captured): the program speaks to the destination, not to
// the proxy, and the proxy decides on the name and port it names, as on a
// CONNECT.
type capturedConn interface {
	net.Conn
	Destination() (host string, port int)
}

// A Decision is what the proxy decided on one request.
type Decision struct {
	// Host is the destination as decided on: lower case, no trailing dot,
	// no brackets (quoted when not a host name).
	Host     string
	Port     int
	Protocol string // "connect", "http", "socks5" or "transparent"
	Allowed  bool
	// Rule is the allowed or denied pattern that decided, or "".
	Rule string
	// Reason is why a refused destination is refused, in a few words
	// ("not in the allowlist"); "" when allowed.
	Reason string
	// Allow is the setting that would allow a refused destination
	// ("--allow-domain example.com"), or "" when none would: a name that
	// is not a host name.
	Allow string
	// Asked tells that Ask was asked about the destination, and Answer is
	// its answer.
	Asked  bool
	Answer Answer
	// Secrets name the secrets the proxy put in the request (see
	// Server.Secrets).
	Secrets []string
}

// server is a Server with its defaults filled in.
type server struct {
	Server
	// refused are the hosts whose refusal was logged at Warn.
	refusedMu   sync.Mutex
	refused     map[string]struct{}
	refusedFull sync.Once
	slots       chan struct{} // a token per connection served
	busy        chan struct{} // a token per connection refused politely
	asks        asks
	idle        idlePool // upstream connections of plain HTTP requests
}

func (s *Server) withDefaults() *server {
	srv := &server{Server: *s}
	if srv.Dial == nil {
		d := &net.Dialer{Timeout: dialTimeout}
		srv.Dial = d.DialContext
	}
	if srv.Log == nil {
		srv.Log = hclog.NewNullLogger()
	}
	if srv.MaxConns <= 0 {
		srv.MaxConns = DefaultMaxConns
	}
	if srv.IdleTimeout <= 0 {
		srv.IdleTimeout = DefaultIdleTimeout
	}
	if srv.HeaderTimeout <= 0 {
		srv.HeaderTimeout = DefaultHeaderTimeout
	}
	if srv.Setting == "" {
		srv.Setting = DefaultSetting
	}
	if srv.AskTimeout <= 0 {
		srv.AskTimeout = DefaultAskTimeout
	}
	srv.asks.m = map[askKey]*question{}
	srv.refused = map[string]struct{}{}
	srv.slots = make(chan struct{}, srv.MaxConns)
	srv.busy = make(chan struct{}, busySlots)
	return srv
}

// Serve accepts connections on l until ctx ends or l fails, and serves
// each, sniffing its protocol. It closes l and every connection it serves
// before it returns. It returns nil when ctx ended, and the listener's
// error otherwise.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := s.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	context.AfterFunc(ctx, func() { l.Close() }) // wakes Accept
	var wg sync.WaitGroup
	err := srv.accept(ctx, l, &wg)
	cancel() // closes every connection
	l.Close()
	wg.Wait()
	return err
}

func (srv *server) accept(ctx context.Context, l net.Listener, wg *sync.WaitGroup) error {
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				// Out of descriptors, say: wait for some to be freed.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				srv.Log.Warn("accept failed; retrying", "error", err, "delay", backoff)
				select {
				case <-time.After(backoff):
					continue
				case <-ctx.Done():
					return nil
				}
			}
			return fmt.Errorf("proxy: accept: %w", err)
		}
		backoff = 0
		var tokens chan struct{}
		select {
		case srv.slots <- struct{}{}:
			tokens = srv.slots
		default:
			select {
			case srv.busy <- struct{}{}:
				tokens = srv.busy
			default:
				c.Close()
				continue
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-tokens }()
			srv.serveConn(ctx, c, tokens == srv.busy)
		}()
	}
}

// serveConn serves c, or refuses it when busy.
func (srv *server) serveConn(ctx context.Context, nc net.Conn, busy bool) {
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	defer nc.Close()
	timeout := srv.HeaderTimeout
	if busy {
		timeout = min(timeout, busyTimeout)
	}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	c := newConn(nc)
	c.t = srv.Traffic
	if cc, ok := nc.(capturedConn); ok {
		host, port := cc.Destination()
		srv.serveCaptured(ctx, c, host, port, busy)
		return
	}
	c.limit = maxHeaderBytes
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		return
	}
	r := io.MultiReader(bytes.NewReader(first[:]), c)
	switch first[0] {
	case socks5Version:
		srv.serveSOCKS(ctx, c, r, busy)
	case 0x04:
		// SOCKS4: "request rejected", and no more.
		_, _ = c.Write([]byte{0, 0x5b, 0, 0, 0, 0, 0, 0})
		closeGracefully(c)
	default:
		srv.serveHTTP(ctx, c, bufio.NewReader(r), busy)
	}
}

// serveCaptured serves c, a captured connection to host:port (see
// capturedConn), recorded as "transparent". A refused one is reset, so that
// the program sees its connection fail at once.
func (srv *server) serveCaptured(ctx context.Context, c *conn, host string, port int, busy bool) {
	const protocol = "transparent"
	reset := func() {
		if tc := tcpOf(c.Conn); tc != nil {
			_ = tc.SetLinger(0)
		}
	}
	if busy {
		reset()
		return
	}
	d := srv.decideWith(ctx, c, host, port, protocol, func(d *decision) { srv.opaque(d) })
	if !d.allowed {
		reset()
		return
	}
	if srv.terminates(d.host, d.port) {
		srv.terminate(ctx, c, nil, d, protocol)
		return
	}
	up, closeUp, err := srv.dial(ctx, d, protocol)
	if err != nil {
		reset()
		return
	}
	defer closeUp()
	tunnel(c, up, nil, srv.IdleTimeout)
}

// decide decides on host:port and logs the decision; the first refusal
// of each host is logged at Warn too (see warnRefused). A destination on
// no list is asked about (see Server.Ask); c's deadline is then renewed.
func (srv *server) decide(ctx context.Context, c *conn, host string, port int, protocol string) decision {
	return srv.decideWith(ctx, c, host, port, protocol, nil)
}

// decideWith is decide, with check, when set, told a destination the
// rules allowed: it may refuse it still (a request's secrets, for one).
func (srv *server) decideWith(ctx context.Context, c *conn, host string, port int, protocol string, check func(*decision)) decision {
	d := srv.rules().decide(host, port)
	var answer Answer
	asked := srv.Ask != nil && askable(d)
	if asked {
		answer = srv.ask(ctx, d.host, port)
		d.allowed = answer == AllowOnce || answer == AllowSandbox
		d.answered = d.allowed
		d.userDenied = answer == Deny
		d.unanswered = answer == NoAnswer
		_ = c.Conn.SetDeadline(time.Now().Add(srv.HeaderTimeout))
	}
	if d.allowed && check != nil {
		check(&d)
	}
	srv.record(d, protocol, asked, answer)
	return d
}

// record logs decision d, tells it to Decided, and warns of a refusal.
func (srv *server) record(d decision, protocol string, asked bool, answer Answer) {
	srv.Log.Info("network access", "host", d.host, "port", d.port, "protocol", protocol, "allowed", d.allowed, "rule", d.rule, "secrets", d.secrets)
	if srv.Decided != nil {
		dd := Decision{Host: d.host, Port: d.port, Protocol: protocol, Allowed: d.allowed, Rule: d.rule, Asked: asked, Answer: answer, Secrets: d.secrets}
		if !d.allowed {
			dd.Reason, dd.Allow = srv.explain(d)
		}
		srv.Decided(dd)
	}
	if !d.allowed {
		srv.warnRefused(d)
	}
}

// maxRefusedHosts bounds the hosts whose refusal is logged at Warn, so
// that a command trying many names cannot grow the set without end.
const maxRefusedHosts = 1000

// warnRefused logs at Warn, the default level, one line the first time a host
// is refused. Later refusals of the host are logged at Info only.
//
// So the user learns what a build needed: a client often shows only "403" or
// "connection refused".
func (srv *server) warnRefused(d decision) {
	srv.refusedMu.Lock()
	_, seen := srv.refused[d.host]
	full := len(srv.refused) >= maxRefusedHosts
	if !seen && !full {
		srv.refused[d.host] = struct{}{}
	}
	srv.refusedMu.Unlock()
	switch {
	case seen:
	case full:
		srv.refusedFull.Do(func() {
			srv.Log.Warn(fmt.Sprintf("refused more than %d hosts; the others are logged at info only", maxRefusedHosts))
		})
	default:
		srv.Log.Warn(strings.TrimPrefix(shortRefusal(d), "boxsh: "))
	}
}

// dial connects to the destination d allowed; ctx ending closes the
// connection.
func (srv *server) dial(ctx context.Context, d decision, protocol string) (*conn, func(), error) {
	c, stop, err := srv.dialRaw(ctx, d, protocol)
	if err != nil {
		return nil, nil, err
	}
	untrack := srv.track(d, c)
	return newConn(c), func() { stop(); untrack(); c.Close() }, nil
}

// dialRaw connects to the destination d allowed, untracked. ctx ending
// closes the connection until stop is called.
func (srv *server) dialRaw(ctx context.Context, d decision, protocol string) (c net.Conn, stop func() bool, err error) {
	addr := net.JoinHostPort(d.host, strconv.Itoa(d.port))
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err = srv.Dial(dctx, "tcp", addr)
	if err != nil {
		srv.Log.Warn("cannot connect upstream", "host", d.host, "port", d.port, "protocol", protocol, "error", err)
		return nil, nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return c, context.AfterFunc(ctx, func() { c.Close() }), nil
}

// track has Live track c, the upstream connection of d, while it carries
// traffic, until the returned function is called.
func (srv *server) track(d decision, c net.Conn) (untrack func()) {
	if srv.Live == nil {
		return func() {}
	}
	return srv.Live.track(d.host, d.port, d.answered, c)
}

// rules are the rules in force: Live's when set, else Rules.
func (srv *server) rules() *Rules {
	if srv.Live != nil {
		return srv.Live.Rules()
	}
	return srv.Rules
}

// refusal explains to a client why d is refused.
func (srv *server) refusal(d decision) string {
	dest := net.JoinHostPort(d.host, strconv.Itoa(d.port))
	switch {
	case d.request != nil:
		return fmt.Sprintf("boxsh: the request to %s is refused: %s. To allow it, run with %s.", dest, d.request, requestAllow(d.scheme, d.host, d.port, d.request))
	case d.leak != nil:
		return fmt.Sprintf("boxsh: the request to %s is refused: %s. The sandbox holds a stand-in for the secret; the proxy puts the real value only in requests to those hosts.", dest, d.leak)
	case d.userDenied:
		return fmt.Sprintf("boxsh: access to %s was denied by the user.", dest)
	case d.invalid:
		return fmt.Sprintf("boxsh: access to %s is not allowed: not a valid host name.", d.host)
	case d.denied:
		return fmt.Sprintf("boxsh: access to %s is refused by %s rule %q.", dest, deniedSetting(srv.Setting), d.rule)
	case d.ip:
		name := d.host
		if ip := net.ParseIP(name); ip != nil && ip.To4() == nil {
			name = "[" + name + "]"
		}
		return fmt.Sprintf("boxsh: access to %s is not allowed by the sandbox's network policy: raw IP addresses are refused unless allowed exactly. Use the host name, or add %q to %s (or run with --allow-domain %s).", dest, name, srv.Setting, name)
	default:
		return fmt.Sprintf("boxsh: access to %s is not allowed by the sandbox's network policy. To allow it, add %q to %s (or run with --allow-domain %s).", dest, d.host, srv.Setting, d.host)
	}
}

// shortRefusal is the one-line reason d is refused: the status text of a
// refused HTTP request and the line logged at Warn.
func shortRefusal(d decision) string {
	switch {
	case d.request != nil:
		return fmt.Sprintf("boxsh: %s %s is not allowed by the request rules of %s", d.request.Method, d.request.Path, d.host)
	case d.leak != nil:
		return fmt.Sprintf("boxsh: the request to %s carries the stand-in of secret %s", d.host, d.leak.Secret)
	case d.userDenied:
		return "boxsh: " + d.host + " was denied by the user"
	case d.invalid:
		return "boxsh: " + d.host + " is not a valid host name"
	case d.denied:
		return fmt.Sprintf("boxsh: %s is refused by the denied domain %s", d.host, d.rule)
	case d.ip:
		return fmt.Sprintf("boxsh: %s is not allowed (an IP address is allowed only when named exactly: --allow-domain %s)", d.host, d.host)
	}
	return fmt.Sprintf("boxsh: %s is not allowed (run with --allow-domain %s)", d.host, d.host)
}

// explain is why d is refused, in a few words, and the setting that would
// allow it ("" when none would). It says what refusal and shortRefusal say.
func (srv *server) explain(d decision) (reason, allow string) {
	switch {
	case d.request != nil:
		return d.request.Error(), requestAllow(d.scheme, d.host, d.port, d.request)
	case d.leak != nil:
		return d.leak.Error(), "" // nothing should allow it
	case d.userDenied:
		return ReasonDenied, "--allow-domain " + d.host
	case d.unanswered:
		return ReasonUnanswered, "--allow-domain " + d.host
	case d.invalid:
		return "not a valid host name", ""
	case d.denied:
		allow = fmt.Sprintf("remove %q from %s", d.rule, deniedSetting(srv.Setting))
		if srv.RuleSource != nil {
			if src := srv.RuleSource(d.rule); src != "" {
				allow += " in " + src
			}
		}
		return fmt.Sprintf("refused by the denied domain %q", d.rule), allow
	case d.ip:
		name := d.host
		if ip := net.ParseIP(name); ip != nil && ip.To4() == nil {
			name = "[" + name + "]"
		}
		return "an IP address is allowed only when named exactly", "--allow-domain " + name
	}
	return "not in the allowlist", "--allow-domain " + d.host
}

// deniedSetting names the setting of denied domains after the one of
// allowed domains.
func deniedSetting(allowed string) string {
	const a, d = "allowedDomains", "deniedDomains"
	if len(allowed) >= len(a) && allowed[len(allowed)-len(a):] == a {
		return allowed[:len(allowed)-len(a)] + d
	}
	return "the denied domains"
}

// dialFailure classifies an upstream connection error.
type dialFailure int

const (
	failOther dialFailure = iota
	failTimeout
	failRefused
	failUnreachable // no such host, or no route
	failNetwork     // network unreachable
)

func classify(err error) dialFailure {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		if dnsErr.IsTimeout {
			return failTimeout
		}
		return failUnreachable
	case isTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return failTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return failRefused
	case errors.Is(err, syscall.EHOSTUNREACH):
		return failUnreachable
	case errors.Is(err, syscall.ENETUNREACH):
		return failNetwork
	}
	return failOther
}
