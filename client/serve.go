package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ServerOptions configure the server of many sandboxes that StartServer
// runs: boxsh --rpc --listen ADDR --sandboxes.
type ServerOptions struct {
	// Binary is the boxsh executable, as Options.Binary.
	Binary string
	// Dir is the server's working directory: the workspace that sandboxes
	// made from FromWorkspace see (default: the caller's).
	Dir string
	// Listen is the address (default 127.0.0.1:0, a free port).
	Listen string
	// TokenFile is --token-file (default: a token of the server's own,
	// removed when it exits).
	TokenFile string
	// MaxSandboxes is --max-sandboxes (0: boxsh's default);
	// WarmSandboxes --warm-sandboxes.
	MaxSandboxes, WarmSandboxes int
	// SandboxDisk is --sandbox-disk (512M, 2G; empty: none).
	SandboxDisk string
	// SandboxIdle is --sandbox-idle (0: boxsh's default; negative: never).
	SandboxIdle time.Duration
	// Audit is --audit FILE.
	Audit string
	// PolicyFile is --policy.
	PolicyFile string
	// Env is the server's environment (nil: the caller's).
	Env []string
	// LogLevel is --log-level of its stderr log.
	LogLevel string
	// Args are more boxsh flags, added after the others.
	Args []string
	// StderrTail is how many bytes of the server's stderr Stderr keeps
	// (default 64 KiB).
	StderrTail int
}

// args is the server's command line after the program name.
func (o ServerOptions) args() []string {
	listen := o.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	a := []string{"--rpc", "--listen", listen, "--sandboxes"}
	add := func(flag, v string) {
		if v != "" {
			a = append(a, flag, v)
		}
	}
	add("--token-file", o.TokenFile)
	if o.MaxSandboxes > 0 {
		add("--max-sandboxes", strconv.Itoa(o.MaxSandboxes))
	}
	if o.WarmSandboxes > 0 {
		add("--warm-sandboxes", strconv.Itoa(o.WarmSandboxes))
	}
	add("--sandbox-disk", o.SandboxDisk)
	switch {
	case o.SandboxIdle < 0:
		add("--sandbox-idle", "0")
	case o.SandboxIdle > 0:
		add("--sandbox-idle", o.SandboxIdle.String())
	}
	add("--audit", o.Audit)
	add("--policy", o.PolicyFile)
	add("--log-level", o.LogLevel)
	return append(a, o.Args...)
}

// LocalServer is a server of many sandboxes that StartServer runs: its
// Server methods manage the sandboxes; Close ends it.
type LocalServer struct {
	*Server
	// URL is where it listens (http://HOST:PORT); Token its bearer token.
	URL, Token string

	cmd        *exec.Cmd
	stderr     *tail
	stderrDone chan struct{} // closed when its stderr has been read to the end
	done       chan struct{} // closed when the process has exited
}

// StartServer runs boxsh --rpc --listen --sandboxes and returns it once
// it listens. Like Start's server, it dies with the program that started
// it (on Linux, however that program dies).
func StartServer(ctx context.Context, opts ServerOptions) (*LocalServer, error) {
	bin, err := FindBinary(opts.Binary)
	if err != nil {
		return nil, &StartError{Message: err.Error(), ExitCode: -1, Err: err}
	}
	cmd := exec.Command(bin, opts.args()...)
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	// A pipe of its own, not StderrPipe: Wait must not close it while
	// readStderr still reads what the server wrote.
	stderr, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	cmd.Stderr = w
	n := opts.StderrTail
	if n <= 0 {
		n = 64 << 10
	}
	l := &LocalServer{cmd: cmd, stderr: &tail{max: n}, stderrDone: make(chan struct{}), done: make(chan struct{})}
	if err := startCmd(cmd); err != nil {
		stderr.Close()
		return nil, &StartError{Message: fmt.Sprintf("start %s: %v", bin, err), ExitCode: -1, Err: err}
	}
	w.Close()
	found := make(chan listening, 1)
	go l.readStderr(stderr, found)
	go func() {
		_ = cmd.Wait()
		close(l.done)
	}()
	select {
	case at := <-found:
		token, err := readToken(at.tokenFile)
		if err != nil {
			l.Kill()
			return nil, &StartError{Message: err.Error(), ExitCode: -1, Err: err}
		}
		l.URL, l.Token = at.url, token
		l.Server = NewServer(at.url, token, nil)
		return l, nil
	case <-l.done:
		select { // what it wrote last, unless a process it left holds stderr
		case <-l.stderrDone:
		case <-time.After(time.Second):
		}
		msg := strings.TrimSpace(l.Stderr())
		if msg == "" {
			msg = "boxsh exited before it listened"
		}
		return nil, &StartError{Message: msg, ExitCode: cmd.ProcessState.ExitCode(), Err: errors.New(msg)}
	case <-ctx.Done():
		l.Kill()
		return nil, ctx.Err()
	}
}

// listening is what the server's first lines on stderr say.
type listening struct {
	url, tokenFile string
}

// readStderr keeps the server's stderr in l.stderr and sends where it
// listens, once its line comes.
func (l *LocalServer) readStderr(r io.ReadCloser, found chan<- listening) {
	defer close(l.stderrDone)
	defer r.Close()
	var at listening
	sent := false
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		_, _ = l.stderr.Write([]byte(line))
		if !sent {
			if f, ok := strings.CutPrefix(line, "boxsh: bearer token in "); ok {
				at.tokenFile = strings.TrimSpace(f)
			}
			if rest, ok := strings.CutPrefix(line, "boxsh: MCP on "); ok {
				u, _, _ := strings.Cut(rest, " ")
				at.url = strings.TrimSuffix(strings.TrimSpace(u), "/mcp")
				found <- at
				sent = true
			}
		}
		if err != nil {
			return
		}
	}
}

// readToken reads the bearer token in path ("": the server has none).
func readToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the server's token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Stderr is the tail of the server's stderr.
func (l *LocalServer) Stderr() string { return l.stderr.String() }

// Pid is the server's process ID.
func (l *LocalServer) Pid() int { return l.cmd.Process.Pid }

// Done is closed when the server has exited.
func (l *LocalServer) Done() <-chan struct{} { return l.done }

// Close stops the server with SIGTERM, and kills it if it has not exited after
// 10 seconds.
//
// The server's sandboxes end. Named ones keep their files for a server started
// again on the same state.
func (l *LocalServer) Close() error {
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.done:
		return nil
	case <-time.After(10 * time.Second):
		l.Kill()
		return errors.New("boxsh server did not exit within 10s of SIGTERM; killed")
	}
}

// Kill kills the server at once (SIGKILL) and waits for it to exit.
func (l *LocalServer) Kill() {
	_ = l.cmd.Process.Kill()
	<-l.done
}
