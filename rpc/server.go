package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/largecall"
	"github.com/boxsh/boxsh/internal/tool"
)

// JSON-RPC 2.0 error codes. They are the same codes boxsh-init answers
// with.
const (
	CodeParseError     = initproto.CodeParseError
	CodeInvalidRequest = initproto.CodeInvalidRequest
	CodeMethodNotFound = initproto.CodeMethodNotFound
	CodeInvalidParams  = initproto.CodeInvalidParams
	CodeInternalError  = initproto.CodeInternalError
)

// ProtocolVersions are the MCP protocol versions of the initialize era the
// server speaks, newest last.
//
// The server answers an initialize request:
//   - with the client's version, if it is in this list;
//   - with the oldest, if the client names none (as boxsh v3 does);
//   - with the newest, if the client names an unknown version.
var ProtocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// Error is a JSON-RPC error, the same type boxsh-init answers with. A
// Backend returns one to report a protocol fault (for example invalid
// arguments) rather than a tool failure.
type Error = initproto.Error

// Backend runs tool calls.
type Backend interface {
	// Start hands a call of the named tool to the backend without waiting
	// for it to run. The arguments are already validated. The server calls
	// Start in the order requests arrive, so that calls queue in that
	// order.
	//
	// done is called once, on any goroutine, with the encoded MCP
	// CallToolResult or an error:
	//   - an *Error is reported to the client as a JSON-RPC error;
	//   - any other error is reported as a failed tool result.
	//
	// Cancelling ctx asks the backend to stop the call. When Start returns
	// an error, done is not called.
	Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error
}

// Server is an MCP server. It answers the MCP methods itself and forwards
// tool calls to its Backend. Serve serves it over a pair of streams,
// ServeStreamable over HTTP.
type Server struct {
	// Tools lists and validates the tools.
	Tools *tool.Registry
	// Backend runs tool calls.
	Backend Backend
	// Name and Version identify the server in the initialize answer.
	Name, Version string
	// Log receives diagnostics; never the protocol stream.
	Log hclog.Logger
	// MaxInFlight bounds the tool calls accepted but not yet answered;
	// beyond it the server stops reading input (default 256).
	MaxInFlight int
	// EndOfInputGrace is how long, after the end of input, calls of tools
	// other than bash may still run (default DefaultEndOfInputGrace).
	EndOfInputGrace time.Duration
	// Elicitor, when set, asks the client of Serve (stdio) questions,
	// once it declared the elicitation capability in initialize.
	Elicitor *Elicitor

	// lists makes the tools/list answers at the first tools/list.
	lists  func() (*toolLists, error)
	modern *modernResults
	tasks  *taskStore
}

// toolLists are the encoded tools/list results. They are made at the first
// tools/list, not at the start: encoding every tool's schemas would delay
// a client's first call (see docs/perf.md).
type toolLists struct {
	// v3 is for clients of protocol version 2024-11-05 (boxsh v3's nine
	// tools), all for later versions (every tool), modern for the modern
	// era's requests.
	v3, all, modern []byte
}

// encodeToolLists encodes the tools/list results of s.
func (s *Server) encodeToolLists() (*toolLists, error) {
	var l toolLists
	var err error
	if l.v3, err = json.Marshal(map[string]any{"tools": s.Tools.Specs()}); err != nil {
		return nil, fmt.Errorf("encode tools list: %w", err)
	}
	if l.all, err = json.Marshal(map[string]any{"tools": s.Tools.AllSpecs()}); err != nil {
		return nil, fmt.Errorf("encode tools list: %w", err)
	}
	if l.modern, err = s.modern.encodeToolsList(s.Tools.AllSpecs()); err != nil {
		return nil, fmt.Errorf("encode tools list: %w", err)
	}
	return &l, nil
}

// request is an incoming JSON-RPC message, read by largecall. largecall
// splits large ones (a write of a big file) faster than encoding/json
// (see docs/perf.md).
type request = largecall.Request

// callParams are the params of a tools/call.
type callParams = largecall.CallParams

// peer is what the server keeps of one client: its Serve call on stdio, or one HTTP request.
type peer struct {
	*Server
	in  *reader
	out output
	log hclog.Logger
	// life ends with the session or transport (not with one HTTP
	// request): the context of calls that outlive their request (tasks).
	life context.Context
	// own are the running tasks a stdio session made (nil on HTTP).
	own *ownTasks
	// client names the client for the backend (see ClientOf).
	client string
	// elicit is the Server's Elicitor on stdio (nil on HTTP).
	elicit *Elicitor

	// mu guards inflight and others; inflight, like wg and slots, may be
	// shared by the sessions of one transport (see http.go).
	mu       *sync.Mutex
	inflight map[string]context.CancelFunc // by raw id
	// others are the calls of tools other than bash, on stdio (nil on
	// HTTP): those still running EndOfInputGrace after the end of input
	// are cancelled.
	others map[*otherCall]bool
	wg     *sync.WaitGroup
	slots  chan struct{}

	// allTools is set when the client's protocol version is after
	// 2024-11-05: tools/list then shows the tools beyond v3's nine.
	allTools atomic.Bool

	// handling is held while a message is handled; stopped, set under it
	// when the loop ends early, keeps the reader from handling more.
	handling sync.Mutex
	stopped  bool
}

// trackLocked registers cancel as the way to cancel the request with id
// key, and tells whether it did. It does not if a request with that id is
// already in flight, since a duplicate id cannot be cancelled separately.
// ss.mu must be held.
func (ss *peer) trackLocked(key string, cancel context.CancelFunc) bool {
	if _, dup := ss.inflight[key]; dup {
		return false
	}
	ss.inflight[key] = cancel
	return true
}

// track is trackLocked for a caller that does not hold ss.mu.
func (ss *peer) track(key string, cancel context.CancelFunc) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.trackLocked(key, cancel)
}

// untrack forgets the request with id key (see track).
func (ss *peer) untrack(key string) {
	ss.mu.Lock()
	delete(ss.inflight, key)
	ss.mu.Unlock()
}

// Serve reads requests from in and writes responses to out until in ends
// and every accepted call has been answered, or ctx is cancelled, or out
// fails. It returns nil at the end of input.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if err := s.prepare(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ss := &peer{
		Server:   s,
		in:       newReader(in, MaxMessageSize),
		log:      s.Log,
		life:     ctx,
		own:      &ownTasks{cancel: map[*task]context.CancelFunc{}},
		client:   "stdio",
		elicit:   s.Elicitor,
		mu:       new(sync.Mutex),
		inflight: make(map[string]context.CancelFunc),
		others:   make(map[*otherCall]bool),
		wg:       new(sync.WaitGroup),
		slots:    make(chan struct{}, s.MaxInFlight),
	}
	ss.out = newWriter(out, func() bool { return ss.in.framed })
	if ss.elicit != nil {
		defer ss.elicit.unbind(ss)
	}
	err := ss.loop(ctx)
	if err != nil && !errors.Is(err, io.EOF) {
		cancel()
	}
	if errors.Is(err, io.EOF) {
		stop := time.AfterFunc(s.EndOfInputGrace, ss.cancelOthers)
		defer stop.Stop()
	}
	// Nobody can poll this session's tasks any more.
	ss.cancelTasks()
	ss.wg.Wait()
	if werr := ss.out.failed(); werr != nil {
		return fmt.Errorf("write response: %w", werr)
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// prepare sets the defaults and encodes the fixed results.
func (s *Server) prepare() error {
	if s.Log == nil {
		s.Log = hclog.NewNullLogger()
	}
	if s.MaxInFlight <= 0 {
		s.MaxInFlight = 256
	}
	if s.EndOfInputGrace <= 0 {
		s.EndOfInputGrace = DefaultEndOfInputGrace
	}
	if s.tasks == nil {
		s.tasks = newTaskStore()
	}
	if s.modern == nil {
		m, err := newModernResults(s)
		if err != nil {
			return fmt.Errorf("encode modern results: %w", err)
		}
		s.modern = m
	}
	if s.lists == nil {
		s.lists = sync.OnceValues(s.encodeToolLists)
	}
	return nil
}

// withBackend is a server like s (prepared) whose calls go to b: its
// tools, name, version and encoded answers, and tasks of its own. It is
// the server of one sandbox among many.
func (s *Server) withBackend(b Backend) *Server {
	return &Server{
		Tools: s.Tools, Backend: b, Name: s.Name, Version: s.Version, Log: s.Log,
		MaxInFlight: s.MaxInFlight, EndOfInputGrace: s.EndOfInputGrace,
		lists: s.lists, modern: s.modern, tasks: newTaskStore(),
	}
}

// DefaultEndOfInputGrace is how long calls of tools other than bash may
// still run after the end of input.
//
// Calls still running then are cancelled and answered with an error. Such
// calls finish far sooner unless they are blocked, on a FIFO say, which
// would keep boxsh from exiting. Bash calls are waited for, as boxsh v3
// does: a client may pipe in a long command and close its input. Their
// timeout bounds them.
const DefaultEndOfInputGrace = 5 * time.Second

// errEndOfInput is the cause of the cancellation of a call still running
// EndOfInputGrace after the end of input.
var errEndOfInput = errors.New("end of input")

// cancelOthers cancels the calls of tools other than bash (see
// EndOfInputGrace).
func (ss *peer) cancelOthers() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for o := range ss.others {
		o.cancel(errEndOfInput)
	}
}

// otherCall is a running call of a tool other than bash (see others).
type otherCall struct{ cancel context.CancelCauseFunc }

func (ss *peer) loop(ctx context.Context) error {
	// Messages are read and handled on one goroutine, so that a request
	// goes from stdin to boxsh-init without a hand-over. The loop itself
	// only waits for it, or for ctx, which ends the session even while the
	// input is silent (the reader, blocked in a read, then stops at its
	// next message).
	done := make(chan error, 1)
	go func() { done <- ss.readAll(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		ss.handling.Lock()
		ss.stopped = true
		ss.handling.Unlock()
		return ctx.Err()
	}
}

// readAll reads and handles messages until the input ends or fails, or the
// output fails.
func (ss *peer) readAll(ctx context.Context) error {
	for {
		msg, err := ss.in.next()
		ss.handling.Lock()
		if ss.stopped {
			ss.handling.Unlock()
			return ctx.Err()
		}
		err = ss.handleInput(ctx, msg, err)
		ss.handling.Unlock()
		if err != nil {
			return err
		}
	}
}

// handleInput handles what one read of the input gave: a message or a
// fault. It returns an error when the session must end.
func (ss *peer) handleInput(ctx context.Context, msg []byte, err error) error {
	switch {
	case errors.Is(err, errTooLarge):
		ss.log.Warn("request over the size limit skipped", "limit", MaxMessageSize)
		ss.writeError(nil, CodeInvalidRequest, "parse_error: "+errTooLarge.Error())
	case errors.Is(err, errBadHeader):
		ss.log.Warn("bad message header", "error", err)
		ss.writeError(nil, CodeParseError, "parse_error: "+err.Error())
	case errors.Is(err, errTruncated):
		ss.log.Warn("input ended inside a message", "error", err)
		ss.writeError(nil, CodeParseError, "parse_error: "+err.Error())
		return io.EOF
	case err != nil:
		return err
	default:
		ss.handle(ctx, msg)
	}
	return ss.out.failed()
}

// handle answers one message, starting a goroutine for tool calls.
func (ss *peer) handle(ctx context.Context, msg []byte) {
	p, ok := ss.parse(msg)
	if !ok {
		return
	}
	ss.dispatch(ctx, &p, eraOf(&p))
}

// parsed is a message that is an object with a usable id and a method.
type parsed struct {
	req    request
	id     json.RawMessage // nil when absent
	method string
}

// era is which protocol era a request is of (see requestEra).
type era struct {
	meta   modernMeta
	modern bool
	err    *Error
}

func eraOf(p *parsed) era {
	m, modern, err := requestEra(p.req.Params)
	return era{m, modern, err}
}

// parse decodes a message, answering those that cannot be dispatched.
func (ss *peer) parse(msg []byte) (parsed, bool) {
	var req request
	if bytes.Equal(bytes.TrimSpace(msg), []byte("null")) {
		ss.writeError(nil, CodeInvalidRequest, "parse_error: a request must be a JSON object")
		return parsed{}, false
	}
	badMethod := false
	if err := largecall.UnmarshalRequest(msg, &req); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field == "method":
			// The rest of the object was decoded: answer with its id.
			badMethod = true
		case errors.As(err, &typeErr) || (len(bytes.TrimSpace(msg)) > 0 && json.Valid(msg)):
			ss.writeError(nil, CodeInvalidRequest, "parse_error: a request must be a JSON object")
			return parsed{}, false
		default:
			ss.writeError(nil, CodeParseError, "parse_error: invalid JSON: "+err.Error())
			return parsed{}, false
		}
	}
	id := req.ID
	if len(id) == 0 {
		id = nil
	} else if c := id[0]; c == '{' || c == '[' || c == 't' || c == 'f' {
		ss.writeError(nil, CodeInvalidRequest, "parse_error: id must be a string, a number or null")
		return parsed{}, false
	} else if !utf8.Valid(id) {
		// Echo the id as valid JSON text: invalid bytes become U+FFFD.
		var s string
		_ = json.Unmarshal(id, &s)
		id, _ = json.Marshal(s)
	}
	if req.Method == nil && !badMethod && id != nil && ss.elicit != nil && ss.elicit.answer(ss, id, msg) {
		return parsed{}, false // a response to a question of the server's
	}
	if req.Method == nil || badMethod {
		ss.writeError(id, CodeInvalidRequest, "parse_error: missing or non-string field: method")
		return parsed{}, false
	}
	return parsed{req: req, id: id, method: *req.Method}, true
}

// dispatch answers a parsed message of era e.
func (ss *peer) dispatch(ctx context.Context, p *parsed, e era) {
	req, id, method := &p.req, p.id, p.method
	if len(method) > len("notifications/") && method[:len("notifications/")] == "notifications/" {
		if id != nil && string(id) != "null" {
			// A notification with an id is neither: say so rather than
			// leave the client waiting for an answer.
			ss.writeError(id, CodeInvalidRequest, method+" is a notification: send it without an id")
			return
		}
		ss.notification(method, req.Params)
		return
	}
	if e.modern {
		switch {
		case req.JSONRPC != "2.0":
			ss.writeError(id, CodeInvalidRequest, `jsonrpc must be "2.0"`)
		case id == nil:
			ss.log.Debug("modern request without id ignored as a notification", "method", method)
		case string(id) == "null":
			ss.writeError(nil, CodeInvalidRequest, "id must be a string or an integer, not null")
		case e.err != nil:
			ss.writeErr(id, e.err)
		default:
			ss.handleModern(ctx, req, id, method, e.meta)
		}
		return
	}
	switch method {
	case "initialize":
		ss.initialize(id, req.Params)
	case "ping":
		ss.writeResult(id, []byte("{}"))
	case "tools/list":
		all := ss.allTools.Load()
		ss.writeToolsList(id, func(l *toolLists) []byte {
			if all {
				return l.all
			}
			return l.v3
		})
	case "tools/call":
		ss.toolsCall(ctx, id, req.Params, false)
	case "server/discover":
		ss.writeError(id, CodeInvalidParams, "server/discover needs _meta."+metaProtocolVersion+" (one of "+strings.Join(ModernVersions, ", ")+")")
	default:
		ss.writeError(id, CodeMethodNotFound, "unknown method: "+method)
	}
}

func (ss *peer) initialize(id json.RawMessage, params json.RawMessage) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
		ClientInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	_ = json.Unmarshal(params, &p) // absent or odd params get the defaults
	version := ProtocolVersions[0]
	switch {
	case slices.Contains(ProtocolVersions, p.ProtocolVersion):
		version = p.ProtocolVersion
	case p.ProtocolVersion != "":
		version = ProtocolVersions[len(ProtocolVersions)-1]
	}
	ss.allTools.Store(version != ProtocolVersions[0])
	if ss.elicit != nil && declaresElicitation(params) {
		ss.elicit.bind(ss)
	}
	ss.log.Debug("initialize", "client", p.ClientInfo.Name, "client_version", p.ClientInfo.Version,
		"requested", p.ProtocolVersion, "protocol", version)
	b, _ := json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{}},
		"serverInfo":      map[string]string{"name": ss.Name, "version": ss.Version},
	})
	ss.writeResult(id, b)
}

func (ss *peer) notification(method string, params json.RawMessage) {
	if method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if err := json.Unmarshal(params, &p); err != nil || len(p.RequestID) == 0 {
		return
	}
	ss.mu.Lock()
	cancel, ok := ss.inflight[string(p.RequestID)]
	ss.mu.Unlock()
	if ok {
		ss.log.Debug("cancelling call", "id", string(p.RequestID), "reason", p.Reason)
		cancel()
	}
}

// toolsCall validates a tools/call and hands it to the backend; modern
// results get the fields of 2026-07-28.
func (ss *peer) toolsCall(ctx context.Context, id json.RawMessage, params json.RawMessage, modern bool) {
	c, ok := ss.callArgs(id, params)
	if !ok {
		return
	}
	ss.startCall(ctx, id, c.name, c.args, modern, c.progress)
}

// toolCall is a validated tools/call.
type toolCall struct {
	name string
	args json.RawMessage
	// progress is _meta.progressToken (see validProgressToken), or nil.
	progress json.RawMessage
}

// callArgs reads and validates the tool and arguments of a tools/call,
// answering when they are wrong. The params are decoded once, their
// progress token included.
func (ss *peer) callArgs(id json.RawMessage, params json.RawMessage) (toolCall, bool) {
	var p callParams
	if err := largecall.UnmarshalCallParams(params, &p); err != nil && len(params) > 0 && string(params) != "null" {
		ss.writeError(id, CodeInvalidParams, "tools/call params must be an object")
		return toolCall{}, false
	}
	name, ok := p.Name.(string)
	if !ok {
		ss.writeError(id, CodeInvalidParams, "tools/call missing string field: params.name")
		return toolCall{}, false
	}
	args, rpcErr := ss.checkCall(name, p.Arguments, true)
	if rpcErr != nil {
		ss.writeErr(id, rpcErr)
		return toolCall{}, false
	}
	return toolCall{name: name, args: args, progress: metaProgressToken(p.Meta)}, true
}

// checkCall validates the arguments of a call of tool name and returns
// them ready for the backend ({} when absent). valid tells that they are
// known to be valid JSON (see largecall.Validate).
func (s *Server) checkCall(name string, args json.RawMessage, valid bool) (json.RawMessage, *Error) {
	spec, ok := s.Tools.Lookup(name)
	if !ok {
		return nil, &Error{Code: CodeInvalidParams, Message: "unknown tool: " + name}
	}
	if err := largecall.Validate(spec, args, valid); err != nil {
		return nil, &Error{Code: CodeInvalidParams, Message: err.Error()}
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	return args, nil
}

// startCall hands a validated call to the backend.
func (ss *peer) startCall(ctx context.Context, id json.RawMessage, name string, args json.RawMessage, modern bool, progress json.RawMessage) {
	select {
	case ss.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	// Only calls of other tools than commands (bash) are cancelled with a
	// cause (see others): a command's context is a plain one, its
	// CancelFunc no wrapper.
	var callCtx context.Context
	var cancel context.CancelFunc
	var oc *otherCall
	command := ss.Tools.IsCommand(name)
	other := !command
	if other {
		var cancelCause context.CancelCauseFunc
		callCtx, cancelCause = context.WithCancelCause(ctx)
		cancel = func() { cancelCause(nil) }
		oc = &otherCall{cancel: cancelCause}
	} else {
		callCtx, cancel = context.WithCancel(ctx)
	}
	key := string(id)
	tracked := id != nil
	ss.mu.Lock()
	if tracked {
		tracked = ss.trackLocked(key, cancel)
	}
	if other && ss.others != nil {
		ss.others[oc] = true
	}
	ss.mu.Unlock()
	ss.wg.Add(1)
	backendCtx, stopProgress := ss.startProgress(callCtx, progress, command)
	finish := func(result json.RawMessage, err error) {
		defer ss.wg.Done()
		defer func() { <-ss.slots }()
		defer cancel()
		stopProgress()
		if tracked || other {
			ss.mu.Lock()
			if tracked {
				delete(ss.inflight, key)
			}
			delete(ss.others, oc)
			ss.mu.Unlock()
		}
		if callCtx.Err() != nil && ctx.Err() == nil {
			if cause := context.Cause(callCtx); cause != errEndOfInput {
				return // cancelled by the client: no answer is sent
			}
			result, err = nil, fmt.Errorf("cancelled: still running %v after the end of input", ss.EndOfInputGrace)
		}
		var rpcErr *Error
		switch {
		case errors.As(err, &rpcErr):
			ss.writeError(id, rpcErr.Code, rpcErr.Message)
		case err != nil:
			ss.log.Error("tool call failed", "tool", name, "error", err)
			b, _ := json.Marshal(tool.Errorf("%s: %v", name, err))
			if modern {
				b = ss.modern.wrap(b)
			}
			ss.writeResult(id, b)
		case modern:
			ss.writeResult(id, ss.modern.wrap(result))
		default:
			ss.writeResult(id, result)
		}
	}
	// The answer is written by whoever finishes the call (for boxsh-init,
	// the goroutine reading its replies): no hand-over on the way out.
	if err := ss.Backend.Start(withClient(backendCtx, ss.client), name, args, finish); err != nil {
		finish(nil, err)
	}
}

var (
	respPrefix = []byte(`{"jsonrpc":"2.0","id":`)
	respResult = []byte(`,"result":`)
	respClose  = []byte(`}`)
	nullID     = []byte(`null`)
)

func (ss *peer) writeResult(id json.RawMessage, result []byte) {
	if id == nil {
		id = nullID
	}
	if err := ss.out.write(respPrefix, id, respResult, result, respClose); err != nil {
		ss.log.Debug("write response failed", "error", err)
	}
}

func (ss *peer) writeError(id json.RawMessage, code int, message string) {
	ss.writeErr(id, &Error{Code: code, Message: message})
}

// writeErr writes an error response carrying e (with its data, if any).
func (ss *peer) writeErr(id json.RawMessage, e *Error) {
	if id == nil {
		id = nullID
	}
	if n, ok := ss.out.(errorNoter); ok {
		n.noteError(e.Code)
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *Error          `json:"error"`
	}{"2.0", id, e})
	if err := ss.out.write(b); err != nil {
		ss.log.Debug("write response failed", "error", err)
	}
}

// output is where a session writes its responses: the stdio writer, or one
// HTTP exchange.
type output interface {
	// write writes one message made of parts: the answer.
	write(parts ...[]byte) error
	// notify writes a notification about the request being answered.
	notify(msg []byte) error
	// failed returns the error that ended the output, if any.
	failed() error
}

// errorNoter is an output that wants the code of an error response before
// it is written (HTTP maps some codes to a status).
type errorNoter interface{ noteError(code int) }

// writeToolsList answers tools/list with the list that pick takes.
func (ss *peer) writeToolsList(id json.RawMessage, pick func(*toolLists) []byte) {
	l, err := ss.lists()
	if err != nil {
		ss.writeError(id, CodeInternalError, err.Error())
		return
	}
	ss.writeResult(id, pick(l))
}
