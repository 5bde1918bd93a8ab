package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/initproto"
)

// A server of many sandboxes (boxsh --rpc --listen --sandboxes) is driven
// over HTTP: Server creates, lists and deletes its sandboxes, and
// Server.Sandbox returns a Client bound to one, whose tool calls go to the
// sandbox's REST endpoint (/s/NAME/v1/tools/TOOL).

// Where a new sandbox's workspace comes from (Server.Create).
const (
	// FromWorkspace is a copy-on-write view of the server's working
	// directory.
	FromWorkspace = apitype.FromWorkspace
	// FromEmpty is an empty directory of the sandbox's own.
	FromEmpty = apitype.FromEmpty
)

// FromSnapshot is the from of Server.Create for a sandbox that starts
// with snapshot snap's files.
func FromSnapshot(snap string) string { return apitype.FromSnapshotPrefix + snap }

// SnapshotInfo describes a snapshot of a Server (see Server.Snapshot).
//
// It holds the server's answer, and how long the sandbox's processes were
// paused for the snapshot.
type SnapshotInfo struct {
	apitype.SnapshotInfo
	// Paused is PausedMS as a duration.
	Paused time.Duration `json:"-"`
}

// SandboxInfo describes a sandbox of a Server.
//
// It holds the server's answer, and the sandbox's age and idle time. Its Token
// is set by Create and Fork only.
type SandboxInfo struct {
	apitype.SandboxInfo
	// Age and Idle are AgeSeconds and IdleSeconds as durations: how long
	// ago it started and ran its last call.
	Age  time.Duration `json:"-"`
	Idle time.Duration `json:"-"`
}

// SandboxDisk is a sandbox's disk use.
//
// It holds the space the sandbox's writable layer took at the server's last
// look, its limit, and whether it is past the limit. Past the limit, files can
// no longer grow.
type SandboxDisk = apitype.SandboxDisk

// CreateRequest is what CreateWith asks for.
//
// It holds a name, where the sandbox's files come from (From*; "" is
// FromWorkspace) and a disk limit such as "512M". An empty limit is the
// server's (--sandbox-disk), which also bounds any limit asked for.
type CreateRequest = apitype.SandboxRequest

// HTTPError is a refusal of a server of many sandboxes.
//
// StatusCode tells why: 429 for a limit reached, 409 for a name taken, 404 for
// no such sandbox, 401 for a wrong token, and so on. A 502, 503 or 504 (a
// router whose server is down or restarting, a server shutting down) matches
// ErrSandboxUnavailable.
type HTTPError struct {
	StatusCode int
	// Detail is the server's explanation.
	Detail string
	// Server names the server that answered (its Boxsh-Server header), if
	// it did.
	Server string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("boxsh: %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Detail)
}

// Is makes errors.Is(err, ErrSandboxUnavailable) true for a 502, 503 or
// 504.
func (e *HTTPError) Is(target error) bool {
	if target != ErrSandboxUnavailable {
		return false
	}
	switch e.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// ErrSandboxUnavailable matches, with errors.Is, the errors of a server of
// many sandboxes (or of the router in front of it) that is down for now:
// restarting, shutting down, unreachable. The call may be made again later:
// a server started again on its state directory hosts its sandboxes again,
// with their files. A sandbox that does not exist is an *HTTPError with
// StatusCode 404 instead, which retrying does not change.
var ErrSandboxUnavailable = errors.New("boxsh: sandbox unavailable (its server is down or restarting)")

// ServerHeader is the header that names the server of an answer.
const ServerHeader = apitype.ServerHeader

// Server is a client of a server of many sandboxes. Its methods are safe
// for concurrent use.
type Server struct {
	base  string
	token string
	hc    *http.Client
}

// NewServer returns a client of the server of many sandboxes at baseURL
// (http://HOST:PORT, or http://unix:PATH: for one on a Unix socket).
//
// token is the server's bearer token, "" for a server with none. A nil hc is
// http.DefaultClient. For a Unix socket, hc's Transport (nil or an
// *http.Transport) is cloned to dial the socket; another kind of Transport
// must dial it itself.
func NewServer(baseURL, token string, hc *http.Client) *Server {
	if hc == nil {
		hc = http.DefaultClient
	}
	base, hc := onUnixSocket(strings.TrimSuffix(baseURL, "/"), hc)
	return &Server{base: base, token: token, hc: hc}
}

// Create starts sandbox name, from FromWorkspace, FromEmpty or
// FromSnapshot(SNAP) ("" is FromWorkspace), and returns it with its
// token.
func (s *Server) Create(ctx context.Context, name, from string) (*SandboxInfo, error) {
	return s.CreateWith(ctx, CreateRequest{Name: name, From: from})
}

// CreateWith starts the sandbox req asks for and returns it with its
// token.
//
// The request names the sandbox in its X-Sandbox header too (SandboxHeader),
// by which a router in front of many servers sends it to the server that
// later requests for the sandbox go to.
func (s *Server) CreateWith(ctx context.Context, req CreateRequest) (*SandboxInfo, error) {
	var info apitype.SandboxInfo
	body, _ := json.Marshal(req)
	if err := s.send(ctx, http.MethodPost, "/v1/sandboxes", s.token, req.Name, body, http.StatusCreated, &info); err != nil {
		return nil, err
	}
	return sandboxInfo(info), nil
}

// NewToken gives sandbox name a new token, which replaces its old one.
//
// A sandbox that the server hosts again after a restart has no token until
// then.
func (s *Server) NewToken(ctx context.Context, name string) (string, error) {
	var out apitype.TokenResponse
	if err := s.do(ctx, http.MethodPost, "/v1/sandboxes/"+url.PathEscape(name)+"/token", s.token, nil, http.StatusOK, &out); err != nil {
		return "", err
	}
	return out.Token, nil
}

// List describes the server's sandboxes.
func (s *Server) List(ctx context.Context) ([]SandboxInfo, error) {
	var out apitype.SandboxList
	if err := s.do(ctx, http.MethodGet, "/v1/sandboxes", s.token, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	list := make([]SandboxInfo, len(out.Sandboxes))
	for i, info := range out.Sandboxes {
		list[i] = *sandboxInfo(info)
	}
	return list, nil
}

// Delete stops sandbox name: its processes end and its files go.
func (s *Server) Delete(ctx context.Context, name string) error {
	return s.do(ctx, http.MethodDelete, "/v1/sandboxes/"+url.PathEscape(name), s.token, nil, http.StatusNoContent, nil)
}

// Snapshot freezes sandbox name's files as snapshot snap.
//
// The sandbox's processes are paused while the files are copied. Writes wait;
// none is lost.
func (s *Server) Snapshot(ctx context.Context, name, snap string) (*SnapshotInfo, error) {
	var info apitype.SnapshotInfo
	body, _ := json.Marshal(apitype.SnapshotRequest{Name: snap, Sandbox: name})
	if err := s.send(ctx, http.MethodPost, "/v1/snapshots", s.token, name, body, http.StatusCreated, &info); err != nil {
		return nil, err
	}
	return snapshotInfo(info), nil
}

// Snapshots lists the server's snapshots.
func (s *Server) Snapshots(ctx context.Context) ([]SnapshotInfo, error) {
	var out apitype.SnapshotList
	if err := s.do(ctx, http.MethodGet, "/v1/snapshots", s.token, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	list := make([]SnapshotInfo, len(out.Snapshots))
	for i, info := range out.Snapshots {
		list[i] = *snapshotInfo(info)
	}
	return list, nil
}

// DeleteSnapshot deletes snapshot snap; sandboxes started from it keep
// their files.
func (s *Server) DeleteSnapshot(ctx context.Context, snap string) error {
	return s.do(ctx, http.MethodDelete, "/v1/snapshots/"+url.PathEscape(snap), s.token, nil, http.StatusNoContent, nil)
}

// Fork starts sandbox newName with sandbox name's files as they are now,
// and returns it with its token.
func (s *Server) Fork(ctx context.Context, name, newName string) (*SandboxInfo, error) {
	var info apitype.SandboxInfo
	body, _ := json.Marshal(apitype.SandboxRequest{Name: newName})
	if err := s.do(ctx, http.MethodPost, "/v1/sandboxes/"+url.PathEscape(name)+"/fork", s.token, body, http.StatusCreated, &info); err != nil {
		return nil, err
	}
	return sandboxInfo(info), nil
}

// Restore resets sandbox name to snapshot snap.
//
// The sandbox's processes are restarted, so terminals and background processes
// end, and its files become the snapshot's. Its token and endpoint stay.
func (s *Server) Restore(ctx context.Context, name, snap string) (*SandboxInfo, error) {
	var info apitype.SandboxInfo
	body, _ := json.Marshal(apitype.RestoreRequest{Snapshot: snap})
	if err := s.do(ctx, http.MethodPost, "/v1/sandboxes/"+url.PathEscape(name)+"/restore", s.token, body, http.StatusOK, &info); err != nil {
		return nil, err
	}
	return sandboxInfo(info), nil
}

// Sandbox returns a Client of sandbox name, which calls its tools with token.
//
// token is the sandbox's own, from Create, or "" for the server's. Closing the
// Client does not end the sandbox; Delete does.
func (s *Server) Sandbox(name, token string) *Client {
	if token == "" {
		token = s.token
	}
	return &Client{
		remote:  &remoteSandbox{srv: s, name: name, token: token},
		pending: make(map[int64]chan response),
		done:    make(chan struct{}),
	}
}

// sandboxInfo is the SandboxInfo of the server's description of a
// sandbox.
func sandboxInfo(info apitype.SandboxInfo) *SandboxInfo {
	return &SandboxInfo{
		SandboxInfo: info,
		Age:         time.Duration(info.AgeSeconds * float64(time.Second)),
		Idle:        time.Duration(info.IdleSeconds * float64(time.Second)),
	}
}

// snapshotInfo is the SnapshotInfo of the server's description of a
// snapshot.
func snapshotInfo(info apitype.SnapshotInfo) *SnapshotInfo {
	return &SnapshotInfo{SnapshotInfo: info, Paused: time.Duration(info.PausedMS * float64(time.Millisecond))}
}

// do sends a request and decodes the answer of status want into out.
func (s *Server) do(ctx context.Context, method, path, token string, body []byte, want int, out any) error {
	return s.send(ctx, method, path, token, "", body, want, out)
}

// SandboxHeader names the sandbox a request is about when its path does
// not (a create by POST, a snapshot), for a router in front of many
// servers to send it where the sandbox lives.
const SandboxHeader = apitype.SandboxHeader

// send is do for a request about sandbox (its SandboxHeader, if not "").
func (s *Server) send(ctx context.Context, method, path, token, sandbox string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if sandbox != "" {
		req.Header.Set(SandboxHeader, sandbox)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := s.hc.Do(req)
	if err != nil {
		if unreachable(err) {
			return fmt.Errorf("boxsh: %s %s: %w: %w", method, path, ErrSandboxUnavailable, err)
		}
		return fmt.Errorf("boxsh: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("boxsh: %s %s: %w", method, path, err)
	}
	if res.StatusCode != want {
		var p apitype.Problem
		if json.Unmarshal(b, &p) != nil || p.Detail == "" {
			p.Detail = strings.TrimSpace(string(b))
		}
		return &HTTPError{StatusCode: res.StatusCode, Detail: p.Detail, Server: res.Header.Get(ServerHeader)}
	}
	switch out := out.(type) {
	case nil:
		return nil
	case *rawText:
		*out = b
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("boxsh: %s %s: undecodable answer: %w", method, path, err)
	}
	return nil
}

// unreachable tells whether err is a server that cannot be reached now:
// refused or reset connections, or closed before an answer, as a
// restart leaves them.
func unreachable(err error) bool {
	// ENOENT: a Unix socket removed by a server that stopped.
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ENOENT) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// remoteSandbox sends a Client's calls to a sandbox's REST endpoint.
type remoteSandbox struct {
	srv         *Server
	name, token string
	closeOnce   sync.Once
}

// call is Client.call over HTTP: tools/call goes through the REST twin.
//
// ping becomes the cheapest tool call there is, list_terminals. It counts as a
// call, so the sandbox is not idle.
func (r *remoteSandbox) call(ctx context.Context, c *Client, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	name := "list_terminals"
	args := []byte("{}")
	switch method {
	case "ping":
	case "tools/call":
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, err
		}
		name, args = p.Name, p.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
	default:
		return nil, &ProtocolError{Method: method, Code: initproto.CodeMethodNotFound, Message: "not sent to a remote sandbox"}
	}
	var res json.RawMessage
	err := r.srv.do(ctx, http.MethodPost, "/s/"+url.PathEscape(r.name)+"/v1/tools/"+url.PathEscape(name), r.token, args, http.StatusOK, &res)
	var he *HTTPError
	if errors.As(err, &he) && he.StatusCode == http.StatusBadRequest {
		return nil, &ProtocolError{Method: method, Code: initproto.CodeInvalidParams, Message: he.Detail}
	}
	if err != nil {
		return nil, err
	}
	if method == "ping" {
		return json.RawMessage("{}"), nil
	}
	return res, nil
}
