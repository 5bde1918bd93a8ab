package rpc

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/largecall"
)

// MCP's streamable HTTP transport (2025-03-26 on, as 2026-07-28 revised
// it): one endpoint, /mcp, taking one JSON-RPC message per POST and
// answering it with one JSON object or an SSE stream. Modern requests are
// stateless; legacy clients get a session (Mcp-Session-Id) from initialize,
// which only scopes their notifications/cancelled. Every client shares the
// server's backend, so one sandbox and one worker pool serve them all,
// unless the server hosts many sandboxes (SandboxRouter): each then has
// an endpoint of its own, and an MCP session's calls carry its id
// (SessionID) for the backend to find its sandbox.

// HTTPOptions configure the HTTP transport.
type HTTPOptions struct {
	// Token is the bearer token every request must carry
	// (Authorization: Bearer TOKEN). Empty disables the check, which
	// Listen allows on loopback addresses only.
	Token string
	// AllowedOrigins are the Origin header values accepted besides those
	// of loopback hosts (http://localhost:PORT and the like).
	AllowedOrigins []string
	// MaxBodyBytes bounds a request body (default MaxMessageSize).
	MaxBodyBytes int64
	// MaxStreams bounds the requests handled at once; more are refused
	// with 503 (default 128). With Sandboxes set, it bounds those of /mcp
	// only: each sandbox's endpoint has SandboxRequests of its own, and
	// the management API (Extra) ManageRequests.
	MaxStreams int
	// SandboxRequests bounds the requests in flight on each sandbox's
	// endpoint (/s/NAME/, see SandboxRouter), long-polls and SSE streams
	// included, and ManageRequests those of the management API; more are
	// refused with 429 naming the limit (defaults 32 and 64).
	SandboxRequests, ManageRequests int
	// MaxConns, if above 0, bounds the connections open at once: at the
	// bound the idle kept-alive ones are closed, and no more is accepted
	// until one closes (the next wait in the listener's backlog). A
	// server of many sandboxes sets it so that HTTP never takes the
	// descriptors its sandboxes need.
	MaxConns int
	// MaxSessions bounds the MCP sessions kept; the least recently
	// used goes when a new one would exceed it (default 1024).
	MaxSessions int
	// SessionIdle ends MCP sessions unused for this long (default 1h).
	SessionIdle time.Duration
	// HeaderTimeout bounds the time to read a request's headers, and
	// BodyTimeout its body (defaults 10s and 60s).
	HeaderTimeout, BodyTimeout time.Duration
	// ShutdownGrace is how long calls in flight may run on after the
	// context of ServeStreamable ends before they are cancelled (default 5s).
	ShutdownGrace time.Duration
	// Extra, when set, serves the requests for paths other than /mcp,
	// behind the same Origin and token checks (the REST twin).
	Extra http.Handler
	// ExtraTokens are bearer tokens accepted besides Token (when Token is
	// set): a sandbox's own token on its endpoint (see SandboxRouter).
	ExtraTokens []string
	// Sandboxes, when set, serves the paths under /s/ (the endpoints of
	// the sandboxes of one server, see SandboxRouter) behind the Origin
	// check but not the token check: each endpoint checks its own tokens.
	Sandboxes http.Handler
	// SessionEnded, when set, is called on a goroutine of its own with
	// the id of every MCP session that ends: deleted by its client,
	// expired, evicted, or at shutdown.
	SessionEnded func(id string)
	// ServerID, when set, names the server in the Boxsh-Server header of
	// every answer (a pod's name, behind a router).
	ServerID string
	// Ready, when set, tells whether the server is ready for traffic: nil,
	// or why not. ServeStreamable's /readyz answers it (see serveHealth).
	Ready func() error
}

// ServerHeader is the header naming the server that answered
// (HTTPOptions.ServerID).
const ServerHeader = apitype.ServerHeader

func (o *HTTPOptions) defaults() {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = MaxMessageSize
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = 128
	}
	if o.SandboxRequests <= 0 {
		o.SandboxRequests = DefaultSandboxRequests
	}
	if o.ManageRequests <= 0 {
		o.ManageRequests = 64
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 1024
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = time.Hour
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = 10 * time.Second
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = 60 * time.Second
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 5 * time.Second
	}
}

// DefaultSandboxRequests is HTTPOptions.SandboxRequests' default.
const DefaultSandboxRequests = 32

// ErrNeedToken refuses to serve a non-loopback address without a token.
var ErrNeedToken = errors.New("refusing to listen on a non-loopback address without a bearer token")

// Listen opens the listener of the HTTP transport: on HOST:PORT, or on a
// Unix socket for unix:PATH (see listenUnix). It refuses a TCP address not
// on loopback when opts has no token.
func Listen(addr string, opts HTTPOptions) (net.Listener, error) {
	if path, ok := UnixPath(addr); ok {
		return listenUnix(path)
	}
	if opts.Token == "" && !IsLoopback(addr) {
		return nil, fmt.Errorf("%w: %s", ErrNeedToken, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// httpTransport is the state of one ServeHTTP.
type httpTransport struct {
	s    *Server
	opts HTTPOptions
	// base ends the calls in flight (after the shutdown grace).
	base context.Context
	// wg and slots are shared by every request, as one stdio session's.
	wg      sync.WaitGroup
	slots   chan struct{}
	streams chan struct{}
	// manage bounds the management API's requests (with Sandboxes).
	manage *requestLimit
	// health is set on the transport of ServeStreamable, which serves
	// /healthz and /readyz; stopping once its shutdown began.
	health   bool
	stopping atomic.Bool

	mu       sync.Mutex
	sessions map[string]*mcpSession
}

// ServeStreamable serves the streamable HTTP transport on ln until ctx ends,
// then stops accepting, lets the calls in flight run for
// opts.ShutdownGrace, cancels those left (they are answered with their
// cancelled result) and returns once every handler has.
func (s *Server) ServeStreamable(ctx context.Context, ln net.Listener, opts HTTPOptions) error {
	if err := s.prepare(); err != nil {
		return err
	}
	opts.defaults()
	base, cancelCalls := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelCalls()
	t := newTransport(s, opts, base)
	t.health = true
	var limit *connLimit
	if opts.MaxConns > 0 {
		limit = limitConns(ln, opts.MaxConns)
		ln = limit
	}
	srv := &http.Server{
		Handler:           t,
		ReadHeaderTimeout: opts.HeaderTimeout,
		// The body's time too: net/http sets the deadline once per
		// request, where the handler would set it twice more.
		ReadTimeout:    opts.HeaderTimeout + opts.BodyTimeout,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		BaseContext:    func(net.Listener) context.Context { return base },
	}
	if limit != nil {
		srv.ConnState = limit.connState
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve HTTP: %w", err)
	case <-ctx.Done():
	}
	t.stopping.Store(true)
	s.Log.Info("HTTP transport stopping", "grace", opts.ShutdownGrace)
	grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(grace); err != nil {
		// Calls still running: cancel them, and give their answers a
		// moment to go out.
		cancelCalls()
		last, cancelLast := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancelLast()
		if err := srv.Shutdown(last); err != nil {
			_ = srv.Close()
		}
	}
	cancelCalls()
	t.wg.Wait()
	<-served
	return nil
}

// newTransport is the transport of s with opts (defaults applied); base
// ends its sessions and the calls that outlive their request.
func newTransport(s *Server, opts HTTPOptions, base context.Context) *httpTransport {
	t := &httpTransport{
		s: s, opts: opts, base: base,
		slots:    make(chan struct{}, s.MaxInFlight),
		streams:  make(chan struct{}, opts.MaxStreams),
		sessions: make(map[string]*mcpSession),
	}
	if opts.Sandboxes != nil {
		t.manage = newRequestLimit("the management API", opts.ManageRequests, "")
	}
	return t
}

// HTTPHandler is the streamable HTTP transport of a Server (MCP at /mcp,
// opts.Extra for the other paths) as a handler of someone else's HTTP
// server: the endpoint of one sandbox among many (see SandboxRouter).
type HTTPHandler struct {
	t      *httpTransport
	cancel context.CancelFunc
}

// NewHTTPHandler returns the transport of s as a handler; ctx, and Close,
// end its sessions and tasks.
func (s *Server) NewHTTPHandler(ctx context.Context, opts HTTPOptions) (*HTTPHandler, error) {
	if err := s.prepare(); err != nil {
		return nil, err
	}
	opts.defaults()
	base, cancel := context.WithCancel(ctx)
	return &HTTPHandler{t: newTransport(s, opts, base), cancel: cancel}, nil
}

// ServeHTTP handles one request.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.t.ServeHTTP(w, r) }

// Close ends the handler's sessions and the calls that outlive their
// request. Calls still running end with their backend.
func (h *HTTPHandler) Close() { h.cancel() }

// ServeHTTP handles one HTTP request.
func (t *httpTransport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if t.opts.ServerID != "" {
		w.Header()[ServerHeader] = []string{t.opts.ServerID}
	}
	if t.health && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz") {
		t.serveHealth(w, r)
		return
	}
	if !t.originAllowed(r) {
		t.s.Log.Warn("HTTP request refused: origin", "origin", r.Header.Get("Origin"), "remote", r.RemoteAddr)
		writeHTTPError(w, http.StatusForbidden, nil, CodeInvalidRequest, "forbidden origin")
		return
	}
	if t.opts.Sandboxes != nil && strings.HasPrefix(r.URL.Path, "/s/") {
		t.opts.Sandboxes.ServeHTTP(w, r) // checks its own tokens and bounds
		return
	}
	if !t.authorized(r) {
		writeUnauthorized(w, r)
		return
	}
	if t.manage != nil && r.URL.Path != "/mcp" {
		if !t.manage.enter() {
			t.s.Log.Debug("HTTP request refused: limit", "limit", "management", "remote", r.RemoteAddr)
			t.manage.refuse(w, r)
			return
		}
		defer t.manage.leave()
	} else {
		select {
		case t.streams <- struct{}{}:
			defer func() { <-t.streams }()
		default:
			w.Header().Set("Retry-After", "1")
			writeHTTPError(w, http.StatusServiceUnavailable, nil, CodeInternalError, "too many concurrent requests")
			return
		}
	}
	if r.URL.Path != "/mcp" {
		if t.opts.Extra != nil {
			t.opts.Extra.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		t.post(w, r)
	case http.MethodDelete:
		t.deleteSession(w, r)
	default:
		// No GET stream: 2026-07-28 removed it, and 2025 allows 405.
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// serveHealth answers the probes, without a token:
//   - /healthz (liveness): 200 while the server serves;
//   - /readyz (readiness): 200 when HTTPOptions.Ready says so, 503 with its
//     reason before, and 503 again once the shutdown began.
func (t *httpTransport) serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path == "/readyz" {
		var err error
		switch {
		case t.stopping.Load():
			err = errors.New("shutting down")
		case t.opts.Ready != nil:
			err = t.opts.Ready()
		}
		if err != nil {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

func (t *httpTransport) post(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, t.opts.MaxBodyBytes)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeHTTPError(w, http.StatusRequestEntityTooLarge, nil, CodeInvalidRequest, fmt.Sprintf("request body over %d bytes", t.opts.MaxBodyBytes))
			return
		}
		writeHTTPError(w, http.StatusBadRequest, nil, CodeParseError, "reading the body: "+err.Error())
		return
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		writeHTTPError(w, http.StatusBadRequest, nil, CodeInvalidRequest, "JSON-RPC batches are not supported")
		return
	}
	out := &httpOut{t: t, w: w, r: r, modern: true, done: make(chan struct{})}
	defer out.close()
	ss := &peer{
		Server: t.s, out: out, log: t.s.Log, life: t.base,
		wg: &t.wg, slots: t.slots, client: "http " + r.RemoteAddr,
	}
	p, ok := ss.parse(body)
	if !ok {
		return // malformed: parse answered
	}
	method := p.method
	hasID := p.id != nil && string(p.id) != "null"
	e := eraOf(&p)
	scope := &mcpSession{inflight: make(map[string]context.CancelFunc)}
	ctx := r.Context()
	var newSession string
	if e.modern {
		if msg := checkModernHeaders(r.Header, method, e.meta.version, p.req.Params); msg != "" && e.err == nil {
			writeHTTPError(w, http.StatusBadRequest, p.id, CodeHeaderMismatch, msg)
			return
		}
	} else {
		if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !slices.Contains(ProtocolVersions, v) && !slices.Contains(ModernVersions, v) {
			writeHTTPError(w, http.StatusBadRequest, p.id, CodeInvalidRequest, "unsupported MCP-Protocol-Version: "+v)
			return
		}
		switch sid := r.Header.Get("Mcp-Session-Id"); {
		case sid != "":
			sess := t.session(sid)
			if sess == nil {
				http.Error(w, "unknown or expired Mcp-Session-Id", http.StatusNotFound)
				return
			}
			scope = sess
			ss.client = sessionClient(sid)
			var stop func() bool
			ctx, stop = mergeCancel(ctx, sess.ctx)
			defer stop()
			ctx = context.WithValue(ctx, sessionIDKey{}, sid)
		case method == "initialize":
			newSession, scope = t.newSession()
		}
	}
	isNotification := !hasID && (strings.HasPrefix(method, "notifications/") || e.modern)
	ss.mu, ss.inflight = &scope.mu, scope.inflight
	// tools/list shows every tool after 2024-11-05: the session's
	// version, or for a request without session its MCP-Protocol-Version.
	if v := r.Header.Get("MCP-Protocol-Version"); scope.ctx == nil {
		ss.allTools.Store(v != "" && v != ProtocolVersions[0])
	} else {
		ss.allTools.Store(scope.allTools.Load())
	}
	if newSession != "" {
		defer func() { scope.allTools.Store(ss.allTools.Load()) }()
	}
	out.modern, out.session = e.modern, newSession
	ss.dispatch(ctx, &p, e)
	if isNotification {
		out.accepted()
		return
	}
	select {
	case <-out.done:
	case <-ctx.Done():
		// The client went away (its cancellation, on HTTP) or the
		// server is stopping: give a cancelled call a moment to answer.
		select {
		case <-out.done:
		case <-time.After(time.Second):
		}
	}
}

// readBody reads a request's body of at most limit bytes: one read into a
// buffer of its size when the request declares it (as clients do), and
// through http.MaxBytesReader otherwise (chunked).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	n := r.ContentLength
	if n < 0 {
		return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	}
	if n > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		return nil, err
	}
	return body, nil
}

// modernStatus is the HTTP status of a modern answer with JSON-RPC error
// code (0: a result), per the 2026-07-28 streamable HTTP page.
func modernStatus(code int) int {
	switch code {
	case CodeInvalidRequest, CodeInvalidParams, CodeParseError, CodeHeaderMismatch,
		CodeMissingRequiredClientCapability, CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	case CodeMethodNotFound:
		return http.StatusNotFound
	}
	return http.StatusOK
}

// wantsSSE reports whether the client accepts only an event stream.
func wantsSSE(accept string) bool {
	return strings.Contains(accept, "text/event-stream") && !strings.Contains(accept, "application/json") && !strings.Contains(accept, "*/*")
}

// checkModernHeaders checks the standard headers of a modern POST against
// its body (2026-07-28 streamable HTTP, "Server Validation"), returning
// what is wrong.
func checkModernHeaders(h http.Header, method, version string, params json.RawMessage) string {
	switch v := h.Get("MCP-Protocol-Version"); {
	case v == "":
		return "Header mismatch: missing MCP-Protocol-Version header"
	case v != version:
		return fmt.Sprintf("Header mismatch: MCP-Protocol-Version header value '%s' does not match body value '%s'", v, version)
	}
	switch m := h.Get("Mcp-Method"); {
	case m == "":
		return "Header mismatch: missing Mcp-Method header"
	case m != method:
		return fmt.Sprintf("Header mismatch: Mcp-Method header value '%s' does not match body value '%s'", m, method)
	}
	var p struct {
		Name   string `json:"name"`
		TaskID string `json:"taskId"`
	}
	switch method {
	case "tools/call":
		_ = largecall.UnmarshalMembers(params, &p, "name", "taskId")
	case "tasks/get", "tasks/update", "tasks/cancel":
		// The Tasks extension routes on the task id (SEP-2663).
		_ = largecall.UnmarshalMembers(params, &p, "name", "taskId")
		p.Name = p.TaskID
	default:
		return ""
	}
	raw := h.Get("Mcp-Name")
	if raw == "" {
		return "Header mismatch: missing Mcp-Name header"
	}
	name, ok := decodeHeaderValue(raw)
	if !ok {
		return "Header mismatch: Mcp-Name header is not valid base64"
	}
	if name != p.Name {
		return fmt.Sprintf("Header mismatch: Mcp-Name header value '%s' does not match body value '%s'", name, p.Name)
	}
	return ""
}

// decodeHeaderValue undoes the =?base64?…?= sentinel encoding of header
// values.
func decodeHeaderValue(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	return string(b), err == nil
}

// mergeCancel returns a context of parent that also ends when other does.
func mergeCancel(parent, other context.Context) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(other, cancel)
	return ctx, func() bool { cancel(); return stop() }
}

// contentTypeJSON is the Content-Type of JSON answers, set without
// canonicalising the key again (net/http never changes a header's
// values).
var contentTypeJSON = []string{"application/json"}

const (
	ssePrefix = "event: message\ndata: "
	sseSuffix = "\n\n"
)
