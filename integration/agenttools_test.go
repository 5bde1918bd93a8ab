package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/internal/tool"
)

// sdkStdio connects the official Go SDK client to `boxsh --rpc ARGS`.
func sdkStdio(t *testing.T, ctx context.Context, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.CommandContext(ctx, boxshPath(), append([]string{"--rpc"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	client := mcp.NewClient(&mcp.Implementation{Name: "boxsh-integration", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, nil)
	require.NoError(t, err, "connect to boxsh --rpc %v", args)
	t.Cleanup(func() { _ = session.Close() })
	return session
}

// eachServer runs fn against a server of each kind: over stdio and HTTP,
// plain and in a sandbox with args added (the SDK as the client).
func eachServer(t *testing.T, sandboxArgs []string, fn func(t *testing.T, ctx context.Context, s *mcp.ClientSession)) {
	for _, mode := range []struct {
		name    string
		sandbox bool
	}{{"plain", false}, {"sandbox", true}} {
		var args []string
		if mode.sandbox {
			args = append([]string{"--sandbox"}, sandboxArgs...)
		}
		t.Run("stdio/"+mode.name, func(t *testing.T) {
			if mode.sandbox {
				requireRootless(t)
			}
			ctx := testContext(t)
			fn(t, ctx, sdkStdio(t, ctx, args...))
		})
		t.Run("http/"+mode.name, func(t *testing.T) {
			if mode.sandbox {
				requireRootless(t)
			}
			ctx := testContext(t)
			fn(t, ctx, startHTTP(t, ctx, args...).sdkHTTP(t, ctx, ""))
		})
	}
}

// sdkOK calls a tool and requires a result without isError.
func sdkOK(t *testing.T, ctx context.Context, s *mcp.ClientSession, name string, args any, out any) {
	t.Helper()
	res := sdkCall(t, ctx, s, name, args)
	require.False(t, res.IsError, "%s: %s", name, sdkText(t, res))
	if out != nil {
		sdkStructured(t, res, out)
	}
}

func TestBackgroundProcesses(t *testing.T) {
	t.Parallel()
	eachServer(t, nil, func(t *testing.T, ctx context.Context, s *mcp.ClientSession) {
		// Answered at once, while the command still runs: it cannot end
		// before the gate it waits for is made, after the answer.
		gate := fmt.Sprintf("/tmp/boxsh-gate-%d", time.Now().UnixNano())
		command := "echo out; echo err >&2; while [ ! -e " + gate + " ]; do sleep 0.02; done; echo done; exit 7"
		var started tool.BashOutput
		sdkOK(t, ctx, s, "bash", map[string]any{"command": command, "background": true}, &started)
		require.NotEmpty(t, started.ID)
		require.Positive(t, started.PID)

		var list tool.ProcessListOutput
		sdkOK(t, ctx, s, "process_list", map[string]any{}, &list)
		require.Len(t, list.Processes, 1)
		assert.Equal(t, started.ID, list.Processes[0].ID)
		assert.Equal(t, command, list.Processes[0].Command)
		assert.Equal(t, tool.ProcessRunning, list.Processes[0].State, "answered before the command ended")
		var gated tool.BashOutput
		sdkOK(t, ctx, s, "bash", map[string]any{"command": "touch " + gate}, &gated)
		require.Equal(t, 0, gated.ExitCode)

		var stdout, stderr string
		var off int64
		var out tool.ProcessOutputResult
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			sdkOK(t, ctx, s, "process_output", map[string]any{"id": started.ID, "offset": off, "wait_ms": 2000}, &out)
			stdout, stderr, off = stdout+out.Stdout, stderr+out.Stderr, out.NextOffset
			if out.State == tool.ProcessExited {
				break
			}
		}
		require.Equal(t, tool.ProcessExited, out.State)
		require.NotNil(t, out.ExitCode)
		assert.Equal(t, 7, *out.ExitCode)
		assert.Equal(t, "out\ndone\n", stdout)
		assert.Equal(t, "err\n", stderr)
		assert.Zero(t, out.Dropped)

		// Read to the end after its exit: forgotten.
		res := sdkCall(t, ctx, s, "process_output", map[string]any{"id": started.ID})
		assert.True(t, res.IsError)
		assert.Contains(t, sdkText(t, res), "unknown background process")

		// args, killed with its whole group; the bash pool is not held.
		// A marker of its own: without a sandbox, ps sees the host's
		// processes, other tests' sleeps among them.
		marker := sleepMarker(300)
		killMarkedAtCleanup(t, marker)
		sdkOK(t, ctx, s, "bash", map[string]any{"args": []string{"sh", "-c", "sleep " + marker + " & sleep " + marker + "; wait"}, "background": true}, &started)
		var fg tool.BashOutput
		sdkOK(t, ctx, s, "bash", map[string]any{"command": "echo foreground"}, &fg)
		assert.Equal(t, "foreground\n", fg.Stdout)
		var killed tool.ProcessInfo
		sdkOK(t, ctx, s, "process_kill", map[string]any{"id": started.ID, "signal": "KILL"}, &killed)
		assert.Equal(t, tool.ProcessExited, killed.State)
		assert.Equal(t, "KILL", killed.Signal)
		sdkOK(t, ctx, s, "bash", map[string]any{"command": "ps -eo pid,args 2>/dev/null | grep -c '[s]leep " + marker + "' || true"}, &fg)
		assert.Equal(t, "0\n", fg.Stdout, "the group's other sleep was killed too")

		res = sdkCall(t, ctx, s, "process_kill", map[string]any{"id": started.ID, "signal": "BOGUS"})
		assert.True(t, res.IsError)
		assert.Contains(t, sdkText(t, res), "unknown signal")
	})
}

// TestClientBackground checks the Go client's typed calls of background
// processes.
func TestClientBackground(t *testing.T) {
	t.Parallel()
	for _, sandboxed := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "sandbox"}[sandboxed], func(t *testing.T) {
			if sandboxed {
				requireRootless(t)
			}
			c := startClient(t, client.Options{Dir: t.TempDir(), Sandbox: sandboxed})
			ctx := testContext(t)
			bg, err := c.StartBackground(ctx, client.ExecRequest{Command: "echo started; exec sleep 300"})
			require.NoError(t, err)
			require.NotEmpty(t, bg.ID)
			out, err := c.ProcessOutput(ctx, bg.ID, 0, 10*time.Second)
			require.NoError(t, err)
			assert.Equal(t, "started\n", out.Stdout)
			assert.Equal(t, tool.ProcessRunning, out.State)
			list, err := c.ListProcesses(ctx)
			require.NoError(t, err)
			require.Len(t, list, 1)
			assert.Equal(t, bg.PID, list[0].PID)
			assert.Equal(t, int64(8), list[0].OutputBytes)
			info, err := c.KillProcess(ctx, bg.ID, "")
			require.NoError(t, err)
			assert.Equal(t, "TERM", info.Signal)
			_, err = c.KillProcess(ctx, "nope", "")
			var te *client.ToolError
			assert.ErrorAs(t, err, &te)
		})
	}
}

// TestBackgroundEndsWithServer checks that background processes end with
// the server. They end at the end of its input, and when boxsh is killed:
// the sandbox, or the plain boxsh-init's process groups, go with it.
func TestBackgroundEndsWithServer(t *testing.T) {
	t.Parallel()
	for _, sandboxed := range []bool{false, true} {
		for _, kill := range []bool{false, true} {
			name := map[bool]string{false: "plain", true: "sandbox"}[sandboxed] + map[bool]string{false: "/eof", true: "/kill"}[kill]
			t.Run(name, func(t *testing.T) {
				var args []string
				if sandboxed {
					requireRootless(t)
					args = []string{"--sandbox"}
				}
				marker := sleepMarker(300)
				killMarkedAtCleanup(t, marker)
				s := startServer(t, testContext(t), serverOptions{args: args})
				m := s.call("bash", map[string]any{"command": "sleep " + marker + " & exec sleep " + marker, "background": true})
				require.False(t, m.toolResult(t).IsError, "%s", m.toolResult(t).text())
				waitForProcess(t, marker)
				if kill {
					require.NoError(t, s.cmd.Process.Kill())
				} else {
					s.closeStdin()
				}
				s.waitExit(exitTimeout)
				requireNoProcess(t, 5*time.Second, marker)
			})
		}
	}
}

// freePort is a TCP port of the host's loopback free just now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// httpGet fetches url from the host, retrying until it answers 200.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 100*time.Millisecond, "GET %s", url)
	return body
}

// startWebServer starts python's web server in the background, on a port it
// picks, and returns its process and the port it listens on. The server
// picks the port because, without a sandbox, on the host's loopback, a port
// found free beforehand may be taken meanwhile.
func startWebServer(t *testing.T, ctx context.Context, s *mcp.ClientSession) (tool.BashOutput, int) {
	t.Helper()
	var started tool.BashOutput
	sdkOK(t, ctx, s, "bash", map[string]any{"args": []string{"python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", "/usr"}, "background": true}, &started)
	serving := regexp.MustCompile(`Serving HTTP on 127\.0\.0\.1 port (\d+)`)
	var stdout string
	var off int64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		var out tool.ProcessOutputResult
		sdkOK(t, ctx, s, "process_output", map[string]any{"id": started.ID, "offset": off, "wait_ms": 2000}, &out)
		stdout, off = stdout+out.Stdout, out.NextOffset
		if m := serving.FindStringSubmatch(stdout); m != nil {
			port, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			return started, port
		}
		require.NotEqual(t, tool.ProcessExited, out.State, "the web server exited: %s %s", stdout, out.Stderr)
	}
	t.Fatalf("the web server did not say its port: %q", stdout)
	return started, 0
}

// TestExposePort checks a web server started in the background inside the
// sandbox, which has its own network namespace (--network disabled). The
// server is exposed, fetched from the host, and unexposed. The sandbox
// cannot reach the host's end.
func TestExposePort(t *testing.T) {
	t.Parallel()
	eachServer(t, []string{"--network", "disabled"}, func(t *testing.T, ctx context.Context, s *mcp.ClientSession) {
		started, port := startWebServer(t, ctx, s)
		var info tool.PortInfo
		sdkOK(t, ctx, s, "expose", map[string]any{"port": port}, &info)
		assert.Equal(t, port, info.Port)
		require.Positive(t, info.HostPort)
		assert.Equal(t, "127.0.0.1:"+strconv.Itoa(info.HostPort), info.Address)
		assert.Contains(t, httpGet(t, "http://"+info.Address+"/"), "Directory listing for /", "the sandbox's server, fetched from the host")

		var list tool.PortsOutput
		sdkOK(t, ctx, s, "ports", map[string]any{}, &list)
		assert.Equal(t, []tool.PortInfo{info}, list.Ports)
		res := sdkCall(t, ctx, s, "expose", map[string]any{"port": port})
		assert.True(t, res.IsError, "exposed twice")
		assert.Contains(t, sdkText(t, res), "already exposed")

		// The host's end is the host's: from the sandbox's own network
		// namespace, nothing listens there.
		var probe tool.BashOutput
		script := "import socket,sys\ntry:\n socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2); print('connected')\nexcept OSError as e: print('refused')"
		sdkOK(t, ctx, s, "bash", map[string]any{"args": []string{"python3", "-c", script, strconv.Itoa(info.HostPort)}}, &probe)
		if info.HostPort != port {
			want := "refused\n"
			if strings.Contains(t.Name(), "plain") {
				want = "connected\n" // no sandbox: the host's own loopback
			}
			assert.Equal(t, want, probe.Stdout)
		}

		// The forwarding socket is boxsh-init's alone: no command holds it.
		var fds tool.BashOutput
		sdkOK(t, ctx, s, "bash", map[string]any{"command": "for f in /proc/$$/fd/*; do readlink $f; done; true"}, &fds)
		assert.Contains(t, fds.Stdout, "pipe:", "the command's output")
		assert.NotContains(t, fds.Stdout, "socket:", "the command's descriptors")

		sdkOK(t, ctx, s, "unexpose", map[string]any{"port": port}, &info)
		_, err := net.DialTimeout("tcp", info.Address, time.Second)
		assert.Error(t, err, "no longer listening")
		sdkOK(t, ctx, s, "ports", map[string]any{}, &list)
		assert.Empty(t, list.Ports)
		res = sdkCall(t, ctx, s, "unexpose", map[string]any{"port": port})
		assert.True(t, res.IsError)
		assert.Contains(t, sdkText(t, res), "is not exposed")
		res = sdkCall(t, ctx, s, "expose", map[string]any{"port": 70000})
		assert.True(t, res.IsError)
		assert.Contains(t, sdkText(t, res), "must be 1-65535")
		sdkOK(t, ctx, s, "process_kill", map[string]any{"id": started.ID}, nil)
	})
}

// TestPublishFlag checks that --publish exposes a port from the start, in
// every network mode.
func TestPublishFlag(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"disabled", "allowlist", "allow_all"} {
		t.Run(network, func(t *testing.T) {
			requireRootless(t)
			port := freePort(t)
			s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox", "--network", network, "--publish", "0:" + strconv.Itoa(port)}})
			m := s.call("bash", map[string]any{"args": []string{"python3", "-m", "http.server", strconv.Itoa(port), "--bind", "127.0.0.1", "--directory", "/usr"}, "background": true})
			require.False(t, m.toolResult(t).IsError, "%s", m.toolResult(t).text())
			var addr string
			require.Eventually(t, func() bool {
				sub := regexp.MustCompile(`published at (127\.0\.0\.1:\d+)`).FindStringSubmatch(s.stderr.String())
				if sub != nil {
					addr = sub[1]
				}
				return sub != nil
			}, 10*time.Second, 20*time.Millisecond, "the published address on stderr: %s", s.stderr.String())
			assert.Contains(t, httpGet(t, "http://"+addr+"/"), "Directory listing for /")
			m = s.call("ports", map[string]any{})
			assert.Contains(t, m.toolResult(t).text(), `"address":"`+addr+`"`)
		})
	}
	r := runBoxshIn(t, testContext(t), t.TempDir(), "", nil, "--publish", "8000", "-c", "true")
	assert.Equal(t, 2, r.code())
	assert.Contains(t, r.stderr, "--publish in shell mode and with -- COMMAND needs a sandbox")
	r = runBoxshIn(t, testContext(t), t.TempDir(), "", nil, "--rpc", "--publish", "x:80")
	assert.Contains(t, r.stderr, `--publish "x:80": expected [HOST_PORT:]PORT`)
}

// TestPublishShell checks --publish in shell mode. A web server the shell
// starts inside --network disabled is fetched from the host at the
// published address. From inside, neither the host's end of the forward nor
// a server on the host's loopback can be reached.
func TestPublishShell(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	port, hostPort := freePort(t), freePort(t)
	outside, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer outside.Close()
	go func() {
		for {
			c, err := outside.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("outside\n"))
			c.Close()
		}
	}()
	probe := "import socket,sys\nfor p in sys.argv[1:]:\n try:\n  socket.create_connection(('127.0.0.1', int(p)), 2); print(p, 'connected')\n except OSError: print(p, 'refused')"
	script := fmt.Sprintf("python3 -m http.server %d --bind 127.0.0.1 --directory /usr >/dev/null 2>&1 &\n"+
		"python3 -c \"$1\" %d %d\necho probed\nread line\nkill $!", port, hostPort, outside.Addr().(*net.TCPAddr).Port)
	cmd := exec.CommandContext(ctx, boxshPath(), "--sandbox", "--network", "disabled", "--publish", fmt.Sprintf("%d:%d", hostPort, port), "-c", script, "sh", probe)
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	br := bufio.NewReader(stdout)
	var probed []string
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err, "the probes' lines; stderr: %s", stderr.String())
		if line == "probed\n" {
			break
		}
		probed = append(probed, strings.TrimSpace(line))
	}
	assert.Equal(t, []string{
		strconv.Itoa(hostPort) + " refused", // the host's end is not in the sandbox
		strconv.Itoa(outside.Addr().(*net.TCPAddr).Port) + " refused",
	}, probed, "from inside the sandbox")
	addr := "127.0.0.1:" + strconv.Itoa(hostPort)
	assert.Contains(t, stderr.String(), fmt.Sprintf("boxsh: port %d of the sandbox published at %s\n", port, addr))
	assert.NotContains(t, stderr.String(), "shares the host's network")
	assert.Contains(t, httpGet(t, "http://"+addr+"/"), "Directory listing for /", "the sandbox's server, fetched from the host")
	_, err = stdin.Write([]byte("done\n"))
	require.NoError(t, err)
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the published port closes with boxsh")

	// allow_all: the port is the host's own, which the line says.
	r := runBoxshIn(t, ctx, t.TempDir(), "", nil, "--sandbox", "--network", "allow_all", "--publish", strconv.Itoa(port), "-c", "true")
	assert.Equal(t, 0, r.code(), "stderr: %s", r.stderr)
	assert.Regexp(t, fmt.Sprintf(`boxsh: port %d of the sandbox published at 127\.0\.0\.1:\d+ \(the sandbox shares the host's network: its port %[1]d is the host's own 127\.0\.0\.1:%[1]d too\)\n`, port), r.stderr)
	// A host port that is taken fails before the sandbox starts.
	r = runBoxshIn(t, ctx, t.TempDir(), "", nil, "--sandbox", "--network", "disabled", "--publish", fmt.Sprintf("%d:%d", outside.Addr().(*net.TCPAddr).Port, port), "-c", "echo ran")
	assert.Equal(t, 1, r.code())
	assert.Contains(t, r.stderr, fmt.Sprintf("boxsh: --publish %d: listen on the host:", port))
	assert.Empty(t, r.stdout)
}

// TestClientExpose checks the Go client's typed calls of exposed ports.
func TestClientExpose(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	c := startClient(t, client.Options{Dir: t.TempDir(), Sandbox: true, Network: client.NetworkDisabled})
	ctx := testContext(t)
	port := freePort(t)
	bg, err := c.StartBackground(ctx, client.ExecRequest{Args: []string{"python3", "-m", "http.server", strconv.Itoa(port), "--bind", "127.0.0.1", "--directory", "/usr"}})
	require.NoError(t, err)
	info, err := c.Expose(ctx, port, 0)
	require.NoError(t, err)
	assert.Contains(t, httpGet(t, "http://"+info.Address+"/"), "Directory listing for /")
	list, err := c.Ports(ctx)
	require.NoError(t, err)
	assert.Equal(t, []client.PortInfo{*info}, list)
	_, err = c.Unexpose(ctx, port)
	require.NoError(t, err)
	_, err = c.Unexpose(ctx, port)
	var te *client.ToolError
	assert.ErrorAs(t, err, &te)
	_, err = c.KillProcess(ctx, bg.ID, "KILL")
	require.NoError(t, err)
}
