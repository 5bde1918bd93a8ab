package integration

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/jsontest"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/syncbuf"
)

// Deadlines. They only bound hangs; no test asserts how fast boxsh is.
const (
	// testTimeout bounds a whole test.
	testTimeout = 90 * time.Second
	// replyTimeout bounds the wait for one response.
	replyTimeout = 20 * time.Second
	// exitTimeout bounds the wait for boxsh to exit.
	exitTimeout = 15 * time.Second
)

// testContext is a context that ends with the test or after testTimeout.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// lockedBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type lockedBuffer = syncbuf.Buffer

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// message is one JSON-RPC message boxsh wrote.
type message struct {
	// Raw is the message body as written, without framing.
	Raw []byte `json:"-"`
	// Framed reports whether it came with a Content-Length header.
	Framed bool `json:"-"`

	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

// idString is the id as written, "null" when absent.
func (m message) idString() string {
	if len(m.ID) == 0 {
		return "null"
	}
	return string(m.ID)
}

// content is an MCP content block.
type content struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

// toolResult is an MCP CallToolResult.
type toolResult struct {
	Content           []content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// text is the text of the first text block.
func (r toolResult) text() string {
	for _, c := range r.Content {
		if c.Type == "text" {
			return c.Text
		}
	}
	return ""
}

// bashOutput is the structured content of a bash result.
type bashOutput struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	DurationMS      *int64 `json:"duration_ms"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	Signal          string `json:"signal"`
}

// toolResult decodes the message as a successful JSON-RPC response
// carrying a CallToolResult.
func (m message) toolResult(t *testing.T) toolResult {
	t.Helper()
	require.Nil(t, m.Error, "expected a result, got an error response: %s", m.Raw)
	require.NotEmpty(t, m.Result, "response without result: %s", m.Raw)
	var r toolResult
	require.NoError(t, json.Unmarshal(m.Result, &r), "result is not a CallToolResult: %s", m.Result)
	return r
}

// bash decodes the message as a bash tool result, checking the shape boxsh
// gives it: one text block holding the JSON of structuredContent, and
// isError exactly when exit_code is not 0. When the proxy refused
// connections meanwhile, structuredContent has network_refusals and a
// second text block names them.
func (m message) bash(t *testing.T) bashOutput {
	t.Helper()
	r := m.toolResult(t)
	require.NotEmpty(t, r.StructuredContent, "bash result without structuredContent: %s", truncate(m.Raw))
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.StructuredContent, &members))
	if _, refused := members["network_refusals"]; refused {
		require.Len(t, r.Content, 2, "bash result content blocks")
		require.Equal(t, "text", r.Content[1].Type)
		require.True(t, strings.HasPrefix(r.Content[1].Text, "[boxsh: network refused: "), "the line of the refusals: %q", r.Content[1].Text)
	} else {
		require.Len(t, r.Content, 1, "bash result content blocks")
	}
	require.Equal(t, "text", r.Content[0].Type)
	require.JSONEq(t, string(r.StructuredContent), r.Content[0].Text, "text block must be the JSON of structuredContent")
	var out bashOutput
	require.NoError(t, json.Unmarshal(r.StructuredContent, &out))
	require.NotNil(t, out.DurationMS, "duration_ms missing: %s", truncate(r.StructuredContent))
	require.Equal(t, out.ExitCode != 0, r.IsError, "isError must match exit_code != 0: %s", truncate(m.Raw))
	return out
}

// rpcErr requires m to be a JSON-RPC error response and returns the error.
func (m message) rpcErr(t *testing.T) rpcError {
	t.Helper()
	require.NotNil(t, m.Error, "expected an error response, got: %s", truncate(m.Raw))
	require.Empty(t, m.Result, "an error response must not carry a result: %s", truncate(m.Raw))
	return *m.Error
}

// truncate shortens long protocol text for failure messages.
func truncate[T ~[]byte | ~string](b T) string {
	s := string(b)
	if len(s) > 600 {
		return s[:600] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

// frame wraps a body in Content-Length framing.
func frame(body []byte) []byte {
	return append(fmt.Appendf(nil, "Content-Length: %d\r\n\r\n", len(body)), body...)
}

// noID marks a request sent without an "id" member.
type noIDType struct{}

var noID = noIDType{}

// requestJSON encodes a JSON-RPC request; id noID leaves the id out, and
// nil params leaves params out.
func requestJSON(id any, method string, params any) []byte {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if _, none := id.(noIDType); !none {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// callParams are the params of tools/call.
func callParams(name string, args any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

// serverOptions configure startServer.
type serverOptions struct {
	// args are passed after --rpc.
	args []string
	// framed makes send use Content-Length framing instead of newlines.
	framed bool
	// manualRead leaves stdout unread until startReading is called.
	manualRead bool
	// dir is the working directory (default: a fresh temporary directory).
	dir string
	// env are added to boxsh's environment.
	env []string
	// wrap is a command that runs boxsh (its path and arguments follow).
	wrap []string
}

// server is a running `boxsh --rpc` driven over its stdio.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  *os.File // write end
	stdout *os.File // read end
	stderr *lockedBuffer
	framed bool
	dir    string

	msgs     chan message
	readOnce sync.Once
	readErr  error // valid once msgs is closed

	exited chan struct{}
	state  *os.ProcessState // valid once exited is closed

	stdinMu     sync.Mutex
	stdinClosed bool
	nextID      int
}

// startServer starts `boxsh --rpc` with its stdin and stdout on pipes.
// The process is killed when ctx ends, and stopped at the end of the test.
func startServer(t *testing.T, ctx context.Context, opts serverOptions) *server {
	t.Helper()
	dir := opts.dir
	if dir == "" {
		dir = t.TempDir()
	}
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	argv := append(append(append([]string(nil), opts.wrap...), boxshPath(), "--rpc"), opts.args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	if opts.env != nil {
		cmd.Env = append(os.Environ(), opts.env...)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	inR.Close()
	outW.Close()

	s := &server{
		t: t, cmd: cmd, stdin: inW, stdout: outR, stderr: stderr,
		framed: opts.framed, dir: dir,
		msgs:   make(chan message, 1024),
		exited: make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		s.state = cmd.ProcessState
		close(s.exited)
	}()
	if !opts.manualRead {
		s.startReading()
	}
	t.Cleanup(s.stop)
	return s
}

// waitQueued waits until boxsh-init has said of n calls, in all, that they
// wait in its queue for a worker or a slot. The front logs each such notice
// at --log-level trace, which the server must have been started with.
func (s *server) waitQueued(n int) {
	s.t.Helper()
	const notice = `state=queued`
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(s.stderr.String(), notice) < n {
		if time.Now().After(deadline) {
			s.t.Fatalf("boxsh-init queued %d calls in 10 s, want %d; stderr:\n%s", strings.Count(s.stderr.String(), notice), n, truncate(s.stderr.String()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pid is boxsh's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// stop ends the server at the end of a test: close stdin, wait, kill.
func (s *server) stop() {
	s.closeStdin()
	select {
	case <-s.exited:
	case <-time.After(exitTimeout):
		s.t.Errorf("boxsh did not exit within %v of the end of its input; killing it", exitTimeout)
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.stdout.Close()
	if s.t.Failed() {
		s.t.Logf("boxsh stderr:\n%s", truncate(s.stderr.String()))
	}
}

// startReading starts the goroutine that reads responses.
func (s *server) startReading() {
	s.readOnce.Do(func() { go s.readLoop() })
}

func (s *server) readLoop() {
	br := bufio.NewReaderSize(s.stdout, 1<<20)
	for {
		m, err := readMessage(br)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.readErr = err
			}
			close(s.msgs)
			return
		}
		s.msgs <- m
	}
}

// readMessage reads one response in whichever framing boxsh chose for it:
// a Content-Length header block, or a line.
func readMessage(br *bufio.Reader) (message, error) {
	const prefix = "content-length:"
	var m message
	head, err := br.Peek(len(prefix))
	if err != nil && len(head) == 0 {
		return m, err
	}
	if strings.EqualFold(string(head), prefix) {
		m.Framed = true
		length := -1
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return m, fmt.Errorf("header block cut short: %q: %w", line, err)
			}
			if !strings.HasSuffix(line, "\r\n") {
				return m, fmt.Errorf("header line not ended by CRLF: %q", line)
			}
			line = strings.TrimSuffix(line, "\r\n")
			if line == "" {
				break
			}
			name, value, ok := strings.Cut(line, ":")
			if ok && strings.EqualFold(strings.TrimSpace(name), "content-length") {
				if length, err = strconv.Atoi(strings.TrimSpace(value)); err != nil {
					return m, fmt.Errorf("bad Content-Length %q", value)
				}
			}
		}
		if length < 0 {
			return m, errors.New("header block without Content-Length")
		}
		m.Raw = make([]byte, length)
		if _, err := io.ReadFull(br, m.Raw); err != nil {
			return m, fmt.Errorf("body of %d bytes cut short: %w", length, err)
		}
	} else {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return m, fmt.Errorf("response line not ended by a newline: %q: %w", truncate(line), err)
		}
		m.Raw = line[:len(line)-1]
	}
	if err := jsontest.Unmarshal(m.Raw, &m); err != nil {
		return m, fmt.Errorf("response is not a JSON object: %v: %s", err, truncate(m.Raw))
	}
	return m, nil
}

// writeRaw writes bytes to boxsh's stdin as they are.
func (s *server) writeRaw(b []byte) {
	s.t.Helper()
	_, err := s.stdin.Write(b)
	require.NoError(s.t, err, "write to boxsh stdin")
}

// send writes one message body in the server's framing.
func (s *server) send(body []byte) {
	s.t.Helper()
	if s.framed {
		s.writeRaw(frame(body))
		return
	}
	s.writeRaw(append(append([]byte{}, body...), '\n'))
}

// request sends a JSON-RPC request.
func (s *server) request(id any, method string, params any) {
	s.t.Helper()
	s.send(requestJSON(id, method, params))
}

// callTool sends a tools/call request.
func (s *server) callTool(id any, name string, args any) {
	s.t.Helper()
	s.request(id, "tools/call", callParams(name, args))
}

// newID returns a fresh string id.
func (s *server) newID() string {
	s.stdinMu.Lock()
	defer s.stdinMu.Unlock()
	s.nextID++
	return fmt.Sprintf("req-%d", s.nextID)
}

// closeStdin ends boxsh's input.
func (s *server) closeStdin() {
	s.stdinMu.Lock()
	defer s.stdinMu.Unlock()
	if !s.stdinClosed {
		s.stdinClosed = true
		s.stdin.Close()
	}
}

// next returns the next response, failing the test if none comes within
// replyTimeout or the output ends.
func (s *server) next() message {
	s.t.Helper()
	timer := time.NewTimer(replyTimeout)
	defer timer.Stop()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			s.t.Fatalf("boxsh output ended while a response was expected (read error: %v)", s.readErr)
		}
		return m
	case <-timer.C:
		s.t.Fatalf("no response within %v", replyTimeout)
		return message{}
	}
}

// tryNext returns the next response, or false after d or at the end of the
// output.
func (s *server) tryNext(d time.Duration) (message, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case m, ok := <-s.msgs:
		return m, ok
	case <-timer.C:
		return message{}, false
	}
}

// expect returns the next response and requires it to answer id (the JSON
// text of the id, such as `"a"` or `7`).
func (s *server) expect(id string) message {
	s.t.Helper()
	m := s.next()
	require.Equal(s.t, id, m.idString(), "response to an unexpected id: %s", truncate(m.Raw))
	require.Equal(s.t, "2.0", m.JSONRPC, "jsonrpc member: %s", truncate(m.Raw))
	return m
}

// expectSet returns the next len(ids) responses, which must answer exactly
// the given ids (JSON texts), in any order.
func (s *server) expectSet(ids ...string) map[string]message {
	s.t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	got := map[string]message{}
	for range ids {
		m := s.next()
		id := m.idString()
		require.True(s.t, want[id], "response to an unexpected id: %s", truncate(m.Raw))
		_, dup := got[id]
		require.False(s.t, dup, "id %s answered twice", id)
		got[id] = m
	}
	return got
}

// roundTrip sends a request with a fresh id and returns its response.
func (s *server) roundTrip(method string, params any) message {
	s.t.Helper()
	id := s.newID()
	s.request(id, method, params)
	return s.expect(strconv.Quote(id))
}

// call runs a tool and returns its response.
func (s *server) call(name string, args any) message {
	s.t.Helper()
	return s.roundTrip("tools/call", callParams(name, args))
}

// bash runs a bash command and returns its structured output.
func (s *server) bash(command string) bashOutput {
	s.t.Helper()
	return s.call("bash", map[string]any{"command": command}).bash(s.t)
}

// requireServing checks that boxsh still answers a tool call.
func (s *server) requireServing() {
	s.t.Helper()
	out := s.bash("echo still-serving")
	require.Equal(s.t, 0, out.ExitCode)
	require.Equal(s.t, "still-serving\n", out.Stdout)
}

// drain closes stdin and returns every remaining response, requiring the
// output to end cleanly (EOF at a message boundary) within replyTimeout.
func (s *server) drain() []message {
	s.t.Helper()
	s.closeStdin()
	var rest []message
	deadline := time.After(replyTimeout)
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				require.NoError(s.t, s.readErr, "boxsh output did not end cleanly")
				return rest
			}
			rest = append(rest, m)
		case <-deadline:
			s.t.Fatalf("boxsh output did not end within %v of closing its input", replyTimeout)
		}
	}
}

// waitExit waits for boxsh to exit and returns its state.
func (s *server) waitExit(d time.Duration) *os.ProcessState {
	s.t.Helper()
	select {
	case <-s.exited:
		return s.state
	case <-time.After(d):
		s.t.Fatalf("boxsh did not exit within %v", d)
		return nil
	}
}

// requireExitZero closes stdin and requires a clean exit with status 0.
func (s *server) requireExitZero() {
	s.t.Helper()
	s.closeStdin()
	st := s.waitExit(exitTimeout)
	require.True(s.t, st.Exited(), "boxsh did not exit normally: %v", st)
	require.Equal(s.t, 0, st.ExitCode(), "boxsh exit status; stderr:\n%s", s.stderr.String())
}

// ---- processes ----

// childPIDs lists the children of pid (every thread's).
func childPIDs(pid int) []int { return proc.ChildrenOf(strconv.Itoa(pid)) }

// descendants lists pid's children, their children, and so on.
func descendants(pid int) []int {
	var all []int
	queue := childPIDs(pid)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		all = append(all, p)
		queue = append(queue, childPIDs(p)...)
	}
	return all
}

// readProcFile reads /proc/PID/NAME.
func readProcFile(pid int, name string) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	return string(b), err
}

// procComm is the command name of pid ("" if it is gone).
func procComm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// rssKiB is the resident set size of pid in KiB (0 if it is gone).
func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// treeRSSKiB is the resident set size of pid and all its descendants.
func treeRSSKiB(pid int) int64 {
	total := rssKiB(pid)
	for _, p := range descendants(pid) {
		total += rssKiB(p)
	}
	return total
}

// findChild waits for a child of pid named comm, or a child of its child
// boxsh-launch (a sandbox's first process), and returns its pid.
func findChild(t *testing.T, pid int, comm string) int {
	t.Helper()
	var found int
	require.Eventually(t, func() bool {
		for _, c := range childPIDs(pid) {
			if procComm(c) == comm {
				found = c
				return true
			}
			// A sandbox's first process is the child of its launcher.
			if procComm(c) == "boxsh-launch" {
				for _, g := range childPIDs(c) {
					if procComm(g) == comm {
						found = g
						return true
					}
				}
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "no child %q of pid %d", comm, pid)
	return found
}

var markerSeq struct {
	sync.Mutex
	n int
}

// sleepMarker returns a sleep duration of about secs seconds whose decimal
// digits are unique to this call ("300.<pid><seq>"). So the sleep process
// can be told apart on the whole machine by its command line.
func sleepMarker(secs int) string {
	markerSeq.Lock()
	defer markerSeq.Unlock()
	markerSeq.n++
	return fmt.Sprintf("%d.%d%04d", secs, os.Getpid(), markerSeq.n)
}

// pidsWithArg lists the live processes (zombies excluded) one of whose
// arguments contains marker.
func pidsWithArg(marker string) map[int]string {
	found := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(b) == 0 {
			continue
		}
		if bytes.Contains(b, []byte(marker)) {
			found[pid] = strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		}
	}
	return found
}

// waitForProcess waits until a process with marker in its arguments runs.
func waitForProcess(t *testing.T, marker string) {
	t.Helper()
	require.Eventually(t, func() bool { return len(pidsWithArg(marker)) > 0 },
		10*time.Second, 10*time.Millisecond, "no process with %q started", marker)
}

// requireNoProcess requires that, within d, no process with one of the
// markers in its arguments is left. Survivors are killed (by pid) so they
// do not outlive the test.
func requireNoProcess(t *testing.T, d time.Duration, markers ...string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := map[int]string{}
		for _, marker := range markers {
			for pid, cmdline := range pidsWithArg(marker) {
				left[pid] = cmdline
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("processes still running %v later: %v", d, left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killMarkedAtCleanup kills leftover processes with marker when the test
// ends, so that a failing test leaves nothing behind.
func killMarkedAtCleanup(t *testing.T, marker string) {
	t.Cleanup(func() {
		for pid := range pidsWithArg(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// sandboxStates lists the sandboxes' state directories under runtimeDir.
func sandboxStates(t *testing.T, runtimeDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(runtimeDir, "boxsh"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
