package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The HTTP measurements (-http) run `--rpc --listen` servers: a sequential
// round trip of `echo x` over loopback (a modern, stateless POST on a
// kept-alive connection, to set beside the stdio figure), the throughput of
// 50 concurrent clients, and the memory one idle MCP session costs.

const (
	// httpClients is how many clients the concurrent figure runs.
	httpClients = 50
	// httpSessions is how many MCP sessions the memory figure opens.
	httpSessions = 1000
)

// httpSuite lists the HTTP measurements.
var httpSuite = []measurement{
	{"HTTP round trip", measureHTTPRoundTrip},
	{"HTTP 50 clients", measureHTTPConcurrent},
	{"HTTP idle sessions", measureHTTPSessions},
}

// httpServer is a running `--rpc --listen` server.
type httpServer struct {
	cmd    *exec.Cmd
	url    string
	token  string
	client *http.Client
	nextID int
	mu     sync.Mutex
}

var listenRE = regexp.MustCompile(`MCP on (http://\S+/mcp)`)

// startHTTPServer starts bin listening on a free loopback port with a token
// in a temporary file.
func startHTTPServer(bin string, c config) (*httpServer, error) {
	dir, err := os.MkdirTemp("", "boxsh-bench-http")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tokenFile := filepath.Join(dir, "token")
	args := append(c.serverArgs(), "--listen", "127.0.0.1:0", "--token-file", tokenFile)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &httpServer{cmd: cmd, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * httpClients}}}
	if s.url, s.token, err = awaitListening(stderr, tokenFile, c.Timeout); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// awaitListening waits, at most timeout, for a server started with
// --listen and --token-file to print its MCP URL on stderr, and reads
// its token.
func awaitListening(stderr io.Reader, tokenFile string, timeout time.Duration) (url, token string, err error) {
	select {
	case url = <-listenAddress(stderr):
	case <-time.After(timeout):
		return "", "", errors.New("no listen address on stderr")
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return "", "", err
	}
	return url, strings.TrimSpace(string(b)), nil
}

// terminate sends cmd SIGTERM, and SIGKILL to its process group if it
// has not exited within exitLimit.
func terminate(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(exitLimit):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// listenAddress reads a server's stderr to its end and sends the MCP URL
// it prints, once.
func listenAddress(stderr io.Reader) <-chan string {
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	return found
}

// stop sends SIGTERM and waits for the server.
func (s *httpServer) stop() { terminate(s.cmd) }

// post sends one JSON-RPC message and returns the answer body.
func (s *httpServer) post(ctx context.Context, body []byte, hdr map[string]string) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("HTTP %d: %s", res.StatusCode, b)
	}
	return b, res.Header, nil
}

// modernCall makes one stateless 2026-07-28 tools/call of bash.
func (s *httpServer) modernCall(ctx context.Context, command string) ([]byte, error) {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.mu.Unlock()
	body := encode(request{ID: &id, Method: "tools/call", Params: map[string]any{
		"name": "bash", "arguments": bashArgs(command),
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	}})
	b, _, err := s.post(ctx, body, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "bash"})
	return b, err
}

// httpSession runs fn on a fresh HTTP server.
func httpSession(t *target, c config, what string, fn func(s *httpServer) error) error {
	s, err := startHTTPServer(t.Bin, c)
	if err != nil {
		return err
	}
	defer s.stop()
	return fn(s)
}

// rawConn is a minimal HTTP/1.1 keep-alive client on one connection, as
// the stdio figures use a raw pipe: the figure is the server's, without
// net/http's client goroutines.
type rawConn struct {
	s    *httpServer
	conn net.Conn
	br   *bufio.Reader
	id   int
}

func (s *httpServer) dialRaw() (*rawConn, error) {
	u, err := url.Parse(s.url)
	if err != nil {
		return nil, err
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		return nil, err
	}
	return &rawConn{s: s, conn: conn, br: bufio.NewReader(conn)}, nil
}

// call makes one modern tools/call of bash and returns the answer body.
func (rc *rawConn) call(command string) ([]byte, error) {
	return rc.do(rc.request(command))
}

// request encodes the next modern tools/call of bash, whole (head and
// body), as the stdio figures encode theirs before they start timing.
func (rc *rawConn) request(command string) []byte {
	rc.id++
	id := rc.id
	body := encode(request{ID: &id, Method: "tools/call", Params: map[string]any{
		"name": "bash", "arguments": bashArgs(command),
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	}})
	u, _ := url.Parse(rc.s.url)
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: bash\r\nContent-Length: %d\r\n\r\n",
		u.Path, u.Host, rc.s.token, len(body))
	return append([]byte(head), body...)
}

// do sends an encoded request and returns the answer body. It reads the
// answer as the stdio figures read theirs, with no more parsing than
// finding its end: a status line, headers up to an empty line, then
// Content-Length bytes. So the figure is the server's, not a client
// library's.
func (rc *rawConn) do(req []byte) ([]byte, error) {
	if _, err := rc.conn.Write(req); err != nil {
		return nil, err
	}
	status, err := rc.br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	ok := bytes.HasPrefix(status, []byte("HTTP/1.1 200 "))
	statusLine := string(bytes.TrimSpace(status))
	n := -1
	for {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if k, v, found := bytes.Cut(line, []byte(":")); found && strings.EqualFold(string(k), "Content-Length") {
			if n, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return nil, fmt.Errorf("bad Content-Length %q", v)
			}
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("%s: answer without Content-Length", statusLine)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rc.br, b); err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s: %s", statusLine, b)
	}
	return b, nil
}

// measureHTTPRoundTrip times sequential `echo x` calls over HTTP.
func measureHTTPRoundTrip(t *target, c config) error {
	return httpSession(t, c, "HTTP round trip", func(s *httpServer) error {
		rc, err := s.dialRaw()
		if err != nil {
			return err
		}
		defer rc.conn.Close()
		var answers tally
		for range c.Warmup {
			b, err := rc.call("echo x")
			if err != nil {
				return err
			}
			answers.check(checkBash(b, "x\n"))
		}
		lat := make(sample, 0, c.RoundTrips)
		for range c.RoundTrips {
			req := rc.request("echo x")
			start := time.Now()
			b, err := rc.do(req)
			if err != nil {
				return err
			}
			lat = append(lat, time.Since(start))
			answers.check(checkBash(b, "x\n"))
		}
		answers.report(t, "HTTP round trip")
		t.set("http_rtt_median_ms", ms(lat.median()))
		t.set("http_rtt_p90_ms", ms(lat.percentile(90)))
		t.set("http_rtt_p99_ms", ms(lat.percentile(99)))
		return nil
	})
}

// measureHTTPConcurrent runs httpClients clients at once, each making
// sequential `true` calls, and reports the total rate.
func measureHTTPConcurrent(t *target, c config) error {
	return httpSession(t, c, "HTTP 50 clients", func(s *httpServer) error {
		ctx, cancel := context.WithTimeout(context.Background(), c.Timeout*10)
		defer cancel()
		per := max(1, c.Pipelined/httpClients)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var answers tally
		var firstErr error
		start := time.Now()
		for range httpClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					b, err := s.modernCall(ctx, "true")
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					if err == nil {
						answers.check(checkBash(b, ""))
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		total := time.Since(start)
		if firstErr != nil {
			return firstErr
		}
		answers.report(t, "HTTP 50 clients")
		t.set("http_concurrent_calls_per_s", float64(httpClients*per)/total.Seconds())
		return nil
	})
}

// measureHTTPSessions opens httpSessions MCP sessions and reports the
// front's RSS growth per session.
func measureHTTPSessions(t *target, c config) error {
	return httpSession(t, c, "HTTP idle sessions", func(s *httpServer) error {
		ctx, cancel := context.WithTimeout(context.Background(), c.Timeout*10)
		defer cancel()
		init := func() error {
			id := 1
			body := encode(request{ID: &id, Method: "initialize", Params: map[string]any{
				"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "boxsh-bench", "version": "1"},
			}})
			_, hdr, err := s.post(ctx, body, nil)
			if err == nil && hdr.Get("Mcp-Session-Id") == "" {
				err = errors.New("initialize answered without Mcp-Session-Id")
			}
			return err
		}
		for range 20 {
			if err := init(); err != nil {
				return err
			}
		}
		time.Sleep(idlePause)
		before, err := statusField(s.cmd.Process.Pid, "VmRSS:")
		if err != nil {
			return err
		}
		for range httpSessions {
			if err := init(); err != nil {
				return err
			}
		}
		time.Sleep(idlePause)
		after, err := statusField(s.cmd.Process.Pid, "VmRSS:")
		if err != nil {
			return err
		}
		t.set("http_session_kib", float64(after-before)/httpSessions)
		return nil
	})
}
