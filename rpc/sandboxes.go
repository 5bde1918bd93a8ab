package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
)

// One server, many sandboxes (boxsh --rpc --listen --sandboxes). A
// SandboxHost (the Manager of package internal/front/fleet) starts and stops
// them; the SandboxRouter gives each an endpoint of its own:
//
//	POST   /v1/sandboxes            create {"name", "from"}: 201 with its token
//	PUT    /v1/sandboxes/NAME       the same create, its name in the path
//	GET    /v1/sandboxes            list: name, from, age, idle time, calls
//	DELETE /v1/sandboxes/NAME       stop it and remove its files
//	GET    /v1/sandboxes/NAME/stats what it uses (its sandbox_stats)
//	POST   /s/NAME/mcp              MCP (both eras), as /mcp serves it
//	POST   /s/NAME/v1/tools/TOOL    the tools' REST twin
//
// The management paths take the server's token. A sandbox's endpoint
// takes its own token (given once, at create) or the server's: a client
// handed one sandbox's token reaches no other. 2025-era clients of /mcp get
// a sandbox per Mcp-Session-Id (SessionBackend), made at their first tool
// call and deleted when the session ends. The bodies of the management
// API's requests and answers are those of package client/apitype.
//
// Behind a router that spreads sandboxes over servers by their name (see
// deploy/), every path names its sandbox, creates included (PUT), and
// every answer names its server (HTTPOptions.ServerID: the Boxsh-Server
// header, SandboxInfo.Server). Once Drain is called (the server is
// stopping), creates are refused with 503 and Retry-After; the calls of
// sandboxes that exist go on.

// SandboxRouter serves the management API and the endpoints of the
// sandboxes of a SandboxHost.
type SandboxRouter struct {
	// Managed, if set, is told each management call (set it before
	// serving).
	Managed func(SandboxCall)

	srv  *Server
	host SandboxHost
	opts HTTPOptions
	base context.Context

	// draining is set once the server stops taking creates (Drain).
	draining atomic.Bool

	mu  sync.Mutex
	eps map[string]*endpoint
	// create serialises the creates of MCP sessions' sandboxes.
	create sync.Mutex
}

// endpoint is one sandbox's MCP and REST handler, its token and the
// bound of its requests in flight.
type endpoint struct {
	backend Backend
	token   string
	h       *HTTPHandler
	limit   *requestLimit
}

// authorized reports whether r carries ep's token or the server's (any
// request, when the server has no token).
func (ep *endpoint) authorized(r *http.Request, server string) bool {
	return server == "" || bearerIs(r, server) || bearerIs(r, ep.token)
}

// NewSandboxRouter returns the router of host's sandboxes, whose servers
// are like srv (its tools, name and version). opts are the server's own
// HTTP options (its token, allowed origins and limits); ctx ends the
// endpoints' sessions.
func NewSandboxRouter(ctx context.Context, srv *Server, host SandboxHost, opts HTTPOptions) (*SandboxRouter, error) {
	if err := srv.prepare(); err != nil {
		return nil, err
	}
	opts.Extra, opts.Sandboxes, opts.SessionEnded, opts.ExtraTokens = nil, nil, nil, nil
	opts.defaults()
	return &SandboxRouter{srv: srv, host: host, opts: opts, base: ctx, eps: make(map[string]*endpoint)}, nil
}

// Management returns the handler of /v1/sandboxes and /openapi.json
// (behind the server's token: HTTPOptions.Extra), which answers 404 for
// other paths.
func (rt *SandboxRouter) Management() (http.Handler, error) {
	doc, err := openAPIDocument(rt.srv.Version, true)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", serveDocument(doc))
	mux.HandleFunc("POST /v1/sandboxes", rt.serveCreate)
	mux.HandleFunc("PUT /v1/sandboxes/{name}", rt.serveCreate)
	mux.HandleFunc("GET /v1/sandboxes", rt.serveList)
	mux.HandleFunc("DELETE /v1/sandboxes/{name}", rt.serveDelete)
	mux.HandleFunc("POST /v1/sandboxes/{name}/token", rt.serveToken)
	rt.serveFiles(mux)
	mux.HandleFunc("GET /v1/sandboxes/{name}/stats", func(w http.ResponseWriter, r *http.Request) {
		st, err := rt.host.Stats(r.PathValue("name"))
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, st)
	})
	rt.serveSnapshots(mux)
	rt.serveNetwork(mux)
	mcp, err := rt.manageMCP()
	if err != nil {
		return nil, err
	}
	mux.Handle("/v1/manage/mcp", mcp)
	mux.HandleFunc("POST /v1/tools/{name}", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, "this server hosts many sandboxes: call /s/NAME/v1/tools/"+r.PathValue("name"))
	})
	return mux, nil
}

// ServeHTTP serves /s/NAME/...: the sandbox's MCP endpoint and REST twin,
// for its token or the server's (HTTPOptions.Sandboxes).
func (rt *SandboxRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/s/")
	name, sub, _ := strings.Cut(rest, "/")
	ep := rt.endpoint(name)
	if ep == nil {
		// Whether a name exists is told to the server's token only.
		if rt.opts.Token != "" && !bearerIs(r, rt.opts.Token) {
			writeUnauthorized(w, r)
			return
		}
		writeProblem(w, http.StatusNotFound, "no sandbox "+name)
		return
	}
	if !ep.authorized(r, rt.opts.Token) {
		writeUnauthorized(w, r)
		return
	}
	if !ep.limit.enter() {
		rt.srv.Log.Debug("HTTP request refused: limit", "sandbox", name, "remote", r.RemoteAddr)
		ep.limit.refuse(w, r)
		return
	}
	defer ep.limit.leave()
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + sub
	r2.URL.RawPath = ""
	ep.h.ServeHTTP(w, r2)
}

// endpoint returns the endpoint of sandbox name, making it at the first
// request, or nil when there is no such sandbox.
func (rt *SandboxRouter) endpoint(name string) *endpoint {
	b, ok := rt.host.Lookup(name)
	if !ok {
		rt.forget(name)
		return nil
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	ep := rt.eps[name]
	if ep != nil && ep.backend == b {
		return ep
	}
	// A sandbox this router did not make (an MCP session's) or one
	// made again under the same name: a token nobody has, so that only
	// the server's reaches it.
	ep, err := rt.newEndpoint(name, b, "")
	if err != nil {
		rt.srv.Log.Error("sandbox endpoint", "sandbox", name, "error", err)
		return nil
	}
	rt.eps[name] = ep
	return ep
}

// newEndpoint makes the endpoint of sandbox name, backend b, with token
// (a new one when "" and the server has a token).
func (rt *SandboxRouter) newEndpoint(name string, b Backend, token string) (*endpoint, error) {
	if token == "" && rt.opts.Token != "" {
		var err error
		if token, err = newToken(); err != nil {
			return nil, err
		}
	}
	s := rt.srv.withBackend(b)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tools/{name}", s.toolHandler)
	mux.HandleFunc("/v1/network", forbidNetwork)
	opts := rt.opts
	opts.Extra = mux
	opts.MaxStreams = max(opts.MaxStreams, opts.SandboxRequests) // the router bounds them
	if opts.Token != "" {
		opts.ExtraTokens = []string{token}
	}
	h, err := s.NewHTTPHandler(rt.base, opts)
	if err != nil {
		return nil, err
	}
	limit := newRequestLimit("sandbox "+name, rt.opts.SandboxRequests, "--sandbox-requests")
	return &endpoint{backend: b, token: token, h: h, limit: limit}, nil
}

// forget drops the endpoint of a sandbox that is gone.
func (rt *SandboxRouter) forget(name string) {
	rt.mu.Lock()
	ep := rt.eps[name]
	delete(rt.eps, name)
	rt.mu.Unlock()
	if ep != nil {
		ep.h.Close()
	}
}

// Forget drops what the router keeps for sandbox name, which the host
// deleted by itself (idle, or at the end of an MCP session).
func (rt *SandboxRouter) Forget(name string) { rt.forget(name) }

// SandboxHeader names the sandbox of a request whose path does not (a
// create by POST, a snapshot), for a router to send it where the sandbox
// lives.
const SandboxHeader = apitype.SandboxHeader

// sandboxHeaderAgrees refuses (400) a request whose SandboxHeader names
// another sandbox than name: a router sent it by that header, maybe to a
// server other than the one name's later requests go to.
func sandboxHeaderAgrees(w http.ResponseWriter, r *http.Request, name string) bool {
	if h := r.Header.Get(SandboxHeader); h != "" && h != name {
		writeProblem(w, http.StatusBadRequest, fmt.Sprintf("the %s header names sandbox %q, the request %q", SandboxHeader, h, name))
		return false
	}
	return true
}

// Drain makes the router refuse creates from now on, with 503 and
// Retry-After (the server is stopping): the sandboxes that exist are served
// on.
func (rt *SandboxRouter) Drain() { rt.draining.Store(true) }

// serveCreate answers POST /v1/sandboxes (the name in the body) and PUT
// /v1/sandboxes/NAME (the name in the path; the body, if any, that of a
// POST, without a name or with the same one).
func (rt *SandboxRouter) serveCreate(w http.ResponseWriter, r *http.Request) {
	var req apitype.SandboxRequest
	const shape = `{"name": NAME, "from": "workspace", "empty" or "snapshot:SNAPSHOT", "disk": SIZE}`
	if name := r.PathValue("name"); name != "" {
		if r.ContentLength != 0 && !decodeOptionalBody(w, r, &req, shape) {
			return
		}
		if req.Name != "" && req.Name != name {
			writeProblem(w, http.StatusBadRequest, fmt.Sprintf("the body names sandbox %q, the path %q", req.Name, name))
			return
		}
		req.Name = name
	} else if !decodeBody(w, r, &req, shape) {
		return
	}
	if !sandboxHeaderAgrees(w, r, req.Name) {
		return
	}
	began := time.Now()
	info, err := rt.createManaged(r.Context(), SandboxRequest{SandboxRequest: req})
	rt.managed(SandboxCall{Action: "create", Name: req.Name, Client: restClient(r), Args: map[string]any{"from": req.From}, Began: began, Err: err})
	if err != nil {
		writeSandboxError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, info)
}

// createManaged makes sandbox req.Name and its endpoint, and describes it with
// its token.
func (rt *SandboxRouter) createManaged(ctx context.Context, req SandboxRequest) (apitype.SandboxInfo, error) {
	if err := rt.checkTaking(); err != nil {
		return apitype.SandboxInfo{}, err
	}
	if err := checkManagedName(req.Name); err != nil {
		return apitype.SandboxInfo{}, err
	}
	b, info, err := rt.host.Create(ctx, req)
	if err != nil {
		return apitype.SandboxInfo{}, err
	}
	return rt.publish(b, info)
}

// fork makes sandbox name from sandbox src's current files, and its
// endpoint.
func (rt *SandboxRouter) fork(ctx context.Context, src, name string) (apitype.SandboxInfo, error) {
	if err := rt.checkTaking(); err != nil {
		return apitype.SandboxInfo{}, err
	}
	if err := checkManagedName(name); err != nil {
		return apitype.SandboxInfo{}, err
	}
	b, info, err := rt.host.Fork(ctx, src, SandboxRequest{SandboxRequest: apitype.SandboxRequest{Name: name}})
	if err != nil {
		return apitype.SandboxInfo{}, err
	}
	return rt.publish(b, info)
}

// checkTaking refuses a new sandbox once the router drains.
func (rt *SandboxRouter) checkTaking() error {
	if rt.draining.Load() {
		return &SandboxError{Status: http.StatusServiceUnavailable, Msg: "the server is shutting down: it takes no new sandbox (its sandboxes are served on until it stops)"}
	}
	return nil
}

// checkManagedName refuses the names of MCP sessions' sandboxes.
func checkManagedName(name string) error {
	if strings.HasPrefix(name, sessionSandboxPrefix) {
		return &SandboxError{Status: http.StatusBadRequest, Msg: fmt.Sprintf("sandbox name %q: names starting with %s are those of the sessions of /mcp", name, sessionSandboxPrefix)}
	}
	return nil
}

// publish makes the endpoint of new sandbox b (info) with a token of its
// own, and returns info with the endpoint and token.
func (rt *SandboxRouter) publish(b Backend, info apitype.SandboxInfo) (apitype.SandboxInfo, error) {
	ep, err := rt.newEndpoint(info.Name, b, "")
	if err != nil {
		_ = rt.host.Delete(info.Name)
		return apitype.SandboxInfo{}, err
	}
	rt.mu.Lock()
	old := rt.eps[info.Name]
	rt.eps[info.Name] = ep
	rt.mu.Unlock()
	if old != nil {
		old.h.Close()
	}
	info.Endpoint = "/s/" + info.Name + "/mcp"
	info.Token = ep.token
	info.Server = rt.opts.ServerID
	return info, nil
}

func (rt *SandboxRouter) serveList(w http.ResponseWriter, _ *http.Request) {
	list := rt.list()
	for i := range list.Sandboxes {
		list.Sandboxes[i].Server = rt.opts.ServerID
	}
	writeJSON(w, http.StatusOK, list)
}

func (rt *SandboxRouter) serveDelete(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	began := time.Now()
	err := rt.host.Delete(name)
	rt.managed(SandboxCall{Action: "delete", Name: name, Client: restClient(r), Began: began, Err: err})
	if err != nil {
		writeSandboxError(w, err)
		return
	}
	rt.forget(name)
	w.WriteHeader(http.StatusNoContent)
}

// writeSandboxError answers a refused create or delete.
func writeSandboxError(w http.ResponseWriter, err error) {
	var se *SandboxError
	if errors.As(err, &se) || errors.As(outOfDescriptors(err), &se) {
		if se.Status == http.StatusTooManyRequests || se.Status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeProblem(w, se.Status, se.Msg)
		return
	}
	writeProblem(w, http.StatusInternalServerError, err.Error())
}

// outOfDescriptors is err as a 503 when the server (or the system) ran
// out of file descriptors, which is no fault of the request: each
// sandbox's share is bounded, so this is the server's limit being too low
// for its sandboxes. Other errors it returns as they are.
func outOfDescriptors(err error) error {
	if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
		return err
	}
	return &SandboxError{Status: http.StatusServiceUnavailable, Msg: "the server has no file descriptor left; retry later, or raise its limit (ulimit -n) or lower --max-sandboxes: " + err.Error()}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// managed tells c to Managed.
func (rt *SandboxRouter) managed(c SandboxCall) {
	if rt.Managed != nil {
		rt.Managed(c)
	}
}
