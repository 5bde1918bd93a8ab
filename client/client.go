package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Bind modes of Options.Binds, as boxsh's --bind takes them.
const (
	ReadOnly    = "ro"
	ReadWrite   = "wr"
	CopyOnWrite = "cow"
)

// Network modes of Options.Network.
const (
	NetworkDisabled  = "disabled"
	NetworkAllowAll  = "allow_all"
	NetworkAllowlist = "allowlist"
)

// Bind is one --bind of the sandbox.
//
// Src is shown read-only (ReadOnly), writable (ReadWrite), or copy-on-write at
// Dst (CopyOnWrite). With CopyOnWrite, writes land in Dst on the host, and Src
// never changes.
type Bind struct {
	Mode string
	Src  string
	// Dst is the directory of a CopyOnWrite bind's changes.
	Dst string
}

// String is the bind as --bind takes it.
func (b Bind) String() string {
	if b.Mode == CopyOnWrite {
		return b.Mode + ":" + b.Src + ":" + b.Dst
	}
	return b.Mode + ":" + b.Src
}

// Options configure the server Start runs (`boxsh --rpc ...`).
type Options struct {
	// Binary is the boxsh executable. Empty: boxsh beside the running
	// program (os.Executable's directory), then on PATH.
	Binary string
	// Dir is the server's working directory, where commands start
	// (default: the caller's). Inside a cow bind's Src, commands start at
	// the same place under its Dst.
	Dir string
	// Sandbox runs every tool in a rootless sandbox (--sandbox). Binds,
	// Network, AllowDomains and Cache turn it on too, as does a PolicyFile
	// with file rules or network settings: none of them is ignored.
	Sandbox bool
	// Binds are the sandbox's --bind flags.
	Binds []Bind
	// InPlace is --in-place (Linux): each CopyOnWrite bind's view is
	// shown at its Src too, where commands started in Src start.
	InPlace bool
	// Network is --network: NetworkDisabled, NetworkAllowAll or
	// NetworkAllowlist; empty leaves the policy's.
	Network string
	// AllowDomains are --allow-domain names; without Network they mean
	// NetworkAllowlist (with another mode, Start fails).
	AllowDomains []string
	// Cache is --cache: a host directory kept across runs for the tools'
	// caches (the sandbox's $HOME/.cache).
	Cache string
	// CommandEnv are --env flags, like a policy's environment.pass and
	// environment.set. NAME passes the server environment's variable to
	// commands; NAME=VALUE sets one.
	CommandEnv []string
	// PolicyFile is --policy.
	PolicyFile string
	// Workers is --workers (0: boxsh's default, 4).
	Workers int
	// Shell is --shell (empty: /bin/sh).
	Shell string
	// Env is the server's environment (nil: the caller's). Commands get
	// what the policy passes of it.
	Env []string
	// LogLevel is --log-level of the server's stderr log.
	LogLevel string
	// Args are more boxsh flags, added after the others.
	Args []string
	// StderrTail is how many bytes of the server's stderr Stderr keeps
	// (default 64 KiB).
	StderrTail int
}

// args is the server's command line after the program name.
func (o Options) args() []string {
	a := []string{"--rpc"}
	if o.Workers > 0 {
		a = append(a, "--workers", strconv.Itoa(o.Workers))
	}
	if o.Shell != "" {
		a = append(a, "--shell", o.Shell)
	}
	if o.LogLevel != "" {
		a = append(a, "--log-level", o.LogLevel)
	}
	if o.Sandbox || len(o.Binds) > 0 || o.Network != "" || len(o.AllowDomains) > 0 || o.Cache != "" {
		a = append(a, "--sandbox")
	}
	for _, b := range o.Binds {
		a = append(a, "--bind", b.String())
	}
	if o.InPlace {
		a = append(a, "--in-place")
	}
	if o.Network != "" {
		a = append(a, "--network", o.Network)
	}
	for _, d := range o.AllowDomains {
		a = append(a, "--allow-domain", d)
	}
	if o.Cache != "" {
		a = append(a, "--cache", o.Cache)
	}
	for _, e := range o.CommandEnv {
		a = append(a, "--env", e)
	}
	if o.PolicyFile != "" {
		a = append(a, "--policy", o.PolicyFile)
	}
	return append(a, o.Args...)
}

// FindBinary returns the boxsh executable that Start would run for explicit.
//
// That is explicit itself when set, else boxsh in the running program's
// directory, else boxsh on PATH.
func FindBinary(explicit string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("boxsh binary: %w", err)
		}
		return explicit, nil
	}
	var looked []string
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "boxsh")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
		looked = append(looked, p)
	}
	p, err := exec.LookPath("boxsh")
	if err == nil {
		return p, nil
	}
	looked = append(looked, "PATH")
	return "", fmt.Errorf("boxsh binary not found (looked in %v); set Options.Binary", looked)
}

// Client is a running boxsh MCP server. Its methods are safe for
// concurrent use.
type Client struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tail

	wmu sync.Mutex // serializes writes to stdin

	mu      sync.Mutex
	pending map[int64]chan response
	closed  bool
	nextID  atomic.Int64

	done    chan struct{} // closed once the process has exited
	goneErr *ServerGoneError

	lock *os.File // a session's lock, held until the process has exited

	// view, for the server of a session, maps the project's host path to
	// where the sandbox shows it (see Session.Start).
	view *pathView

	// remote, for a sandbox of a server of many (Server.Sandbox), sends
	// the calls over HTTP; cmd, stdin and stderr are nil then.
	remote *remoteSandbox
}

// response is the answer to one request.
type response struct {
	result json.RawMessage
	err    *rpcError
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Start starts `boxsh --rpc` with opts and waits until it serves.
//
// Start returns once the server answers initialize; with a sandbox, once the
// sandbox is up. Cancelling ctx during Start kills the server; afterwards ctx
// does not matter.
//
// Options the client can check (bind modes and sources, the network mode) are
// checked first. Start returns a *StartError, which starting again does not
// fix, when:
//
//   - the client or the server refuses the configuration, or
//   - the server exits before it serves.
//
// On Linux the server dies with the program that started it, however that
// program dies (a parent-death signal). So its sandbox and commands do not
// outlive their owner.
func Start(ctx context.Context, opts Options) (*Client, error) {
	return start(ctx, opts, nil, nil)
}

// start is Start, with a session lock and a path view.
//
// lock, when set, is a session lock that the Client holds until the server has
// exited; it is closed if start fails. view holds the paths that the file
// calls translate.
func start(ctx context.Context, opts Options, lock *os.File, view *pathView) (c *Client, err error) {
	defer func() {
		if err != nil && lock != nil {
			lock.Close()
		}
	}()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	bin, err := FindBinary(opts.Binary)
	if err != nil {
		return nil, &StartError{Message: err.Error(), ExitCode: -1, Err: err}
	}
	cmd := exec.Command(bin, opts.args()...)
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	n := opts.StderrTail
	if n <= 0 {
		n = 64 << 10
	}
	c = &Client{
		cmd: cmd, stdin: stdin, stderr: &tail{max: n},
		pending: map[int64]chan response{},
		done:    make(chan struct{}),
		lock:    lock,
		view:    view,
	}
	cmd.Stderr = c.stderr
	// A process of the server that keeps stderr open must not hold Wait.
	cmd.WaitDelay = 2 * time.Second
	if err := startCmd(cmd); err != nil {
		return nil, &StartError{Message: fmt.Sprintf("start %s: %v", bin, err), ExitCode: -1, Err: err}
	}
	go c.readLoop(stdout)
	_, err = c.call(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "boxsh-go-client", "version": "1"},
	})
	if err == nil {
		err = c.notify("notifications/initialized", nil)
	}
	if err != nil {
		c.kill()
		var gone *ServerGoneError
		if errors.As(err, &gone) {
			code := -1
			if ps := c.cmd.ProcessState; ps != nil {
				code = ps.ExitCode()
			}
			return nil, startFailed(gone, code)
		}
		return nil, err
	}
	return c, nil
}

// validate checks what the client can check of o before a server runs.
//
// It checks the bind modes, that each bind's source exists, that a cow bind
// has a destination, and the network mode.
func (o Options) validate() error {
	bad := func(format string, a ...any) error {
		msg := fmt.Sprintf(format, a...)
		return &StartError{Message: msg, ExitCode: -1, Err: errors.New(msg)}
	}
	dir := o.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	for _, b := range o.Binds {
		switch b.Mode {
		case ReadOnly, ReadWrite, CopyOnWrite:
		default:
			return bad("bind %s: unknown mode %q (use %s, %s or %s)", b, b.Mode, ReadOnly, ReadWrite, CopyOnWrite)
		}
		if b.Src == "" {
			return bad("bind %s: no source", b)
		}
		if b.Mode == CopyOnWrite && b.Dst == "" {
			return bad("bind %s: a %s bind needs Dst", b, CopyOnWrite)
		}
		src := b.Src
		if !filepath.IsAbs(src) {
			src = filepath.Join(dir, src)
		}
		if _, err := os.Stat(src); err != nil {
			return &StartError{Message: fmt.Sprintf("bind %s: source: %v", b, err), ExitCode: -1, Err: err}
		}
	}
	switch o.Network {
	case "", NetworkDisabled, NetworkAllowAll, NetworkAllowlist:
	default:
		return bad("network %q: expected %s, %s or %s", o.Network, NetworkDisabled, NetworkAllowAll, NetworkAllowlist)
	}
	return nil
}

// readLoop reads responses until stdout ends, then waits for the process
// and fails the calls still waiting.
func (c *Client) readLoop(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	var readErr error
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			c.dispatch(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			break
		}
	}
	waitErr := c.cmd.Wait()
	if c.lock != nil {
		c.lock.Close()
	}
	if waitErr == nil {
		waitErr = readErr
	}
	if waitErr == nil {
		waitErr = errors.New("exited")
	}
	c.mu.Lock()
	c.goneErr = &ServerGoneError{Err: waitErr, Stderr: lastLines(c.stderr.String(), 20)}
	c.mu.Unlock()
	close(c.done)
}

// resultPrefix and resultInfix frame a success response as the server
// writes it: {"jsonrpc":"2.0","id":N,"result":RESULT}.
var (
	resultPrefix = []byte(`{"jsonrpc":"2.0","id":`)
	resultInfix  = []byte(`,"result":`)
)

// splitResult splits a success response in the server's form without
// scanning its result (bash outputs can be megabytes); ok is false for
// any other form.
func splitResult(line []byte) (id int64, result []byte, ok bool) {
	line = bytes.TrimRight(line, "\r\n")
	rest, found := bytes.CutPrefix(line, resultPrefix)
	if !found || len(line) == 0 || line[len(line)-1] != '}' {
		return 0, nil, false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i > 18 || !bytes.HasPrefix(rest[i:], resultInfix) {
		return 0, nil, false
	}
	id, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return id, rest[i+len(resultInfix) : len(rest)-1], true
}

// dispatch hands one response line to its waiting call.
func (c *Client) dispatch(line []byte) {
	if id, result, ok := splitResult(line); ok {
		c.deliver(id, response{result: result})
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return // not ours to answer; the server speaks only responses
	}
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		return
	}
	c.deliver(id, response{result: m.Result, err: m.Error})
}

// deliver hands r to the call waiting for id, if any.
func (c *Client) deliver(id int64, r response) {
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok {
		ch <- r
	}
}

// write sends one message line.
func (c *Client) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.stdin.Write(b)
	return err
}

// notify sends a notification.
func (c *Client) notify(method string, params any) error {
	b, err := encodeRequest(nil, method, params)
	if err != nil {
		return err
	}
	return c.write(b)
}

// encodeRequest encodes a request line; a nil id makes a notification.
func encodeRequest(id *int64, method string, params any) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id != nil {
		b = append(b, `"id":`...)
		b = strconv.AppendInt(b, *id, 10)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = strconv.AppendQuote(b, method)
	if params != nil {
		p, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("encode %s params: %w", method, err)
		}
		b = append(b, `,"params":`...)
		b = append(b, p...)
	}
	return append(b, '}', '\n'), nil
}

// call sends a request and waits for its answer, the server's end, or ctx.
//
// When ctx ends first, for a tools/call, call sends notifications/cancelled,
// so the server kills the call's processes, and returns ctx's error at once.
func (c *Client) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.remote != nil {
		return c.remote.call(ctx, c, method, params)
	}
	id := c.nextID.Add(1)
	b, err := encodeRequest(&id, method, params)
	if err != nil {
		return nil, err
	}
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	select {
	case <-c.done:
		c.mu.Unlock()
		return nil, c.goneErr
	default:
	}
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(b); err != nil {
		c.forget(id)
		select {
		case <-c.done:
			return nil, c.goneErr
		case <-time.After(time.Second):
			return nil, &ServerGoneError{Err: err, Stderr: lastLines(c.stderr.String(), 20)}
		}
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, &ProtocolError{Method: method, Code: r.err.Code, Message: r.err.Message}
		}
		return r.result, nil
	case <-c.done:
		return nil, c.goneErr
	case <-ctx.Done():
		c.forget(id)
		if method == "tools/call" {
			_ = c.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": context.Cause(ctx).Error()})
		}
		return nil, ctx.Err()
	}
}

// forget stops waiting for request id.
func (c *Client) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.call(ctx, "ping", nil)
	return err
}

// Alive tells whether the server process is still running.
func (c *Client) Alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// Pid is the server's process id (0 for a remote sandbox's client).
func (c *Client) Pid() int {
	if c.cmd == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Stderr returns the end of the server's stderr, its log.
//
// It holds at most Options.StderrTail bytes. It is "" for a remote sandbox's
// client.
func (c *Client) Stderr() string {
	if c.stderr == nil {
		return ""
	}
	return c.stderr.String()
}

// Done is closed once the server process has exited.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close ends the server and waits for it.
//
// It closes the server's input, lets the calls in flight finish for up to 10
// seconds, then kills the server. It waits for the process, so nothing is left
// behind. Calls made after Close fail with ErrClosed.
func (c *Client) Close() error {
	return c.CloseTimeout(10 * time.Second)
}

// CloseTimeout is Close with its own grace period.
func (c *Client) CloseTimeout(grace time.Duration) error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.mu.Unlock()
	if already {
		<-c.done
		return nil
	}
	if c.remote != nil {
		c.remote.closeOnce.Do(func() { close(c.done) }) // the sandbox lives on: Server.Delete ends it
		return nil
	}
	c.wmu.Lock()
	c.stdin.Close()
	c.wmu.Unlock()
	select {
	case <-c.done:
	case <-time.After(grace):
		c.kill()
		return fmt.Errorf("boxsh server did not exit within %v of Close; killed", grace)
	}
	var ee *exec.ExitError
	if errors.As(c.goneErr.Err, &ee) {
		return c.goneErr
	}
	return nil
}

// kill kills the server and waits for it.
func (c *Client) kill() {
	if c.remote != nil {
		c.remote.closeOnce.Do(func() { close(c.done) })
		return
	}
	_ = c.cmd.Process.Kill()
	c.wmu.Lock()
	c.stdin.Close()
	c.wmu.Unlock()
	<-c.done
}

// Kill kills the server at once (SIGKILL) and waits for it to exit; a
// sandbox dies with it. Calls waiting return a *ServerGoneError.
func (c *Client) Kill() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.kill()
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
