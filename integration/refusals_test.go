//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// sdkSandbox connects the official MCP Go SDK client to `boxsh --rpc` with
// args, in dir.
func sdkSandbox(t *testing.T, ctx context.Context, dir string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.CommandContext(ctx, boxshPath(), append([]string{"--rpc"}, args...)...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	client := mcp.NewClient(&mcp.Implementation{Name: "boxsh-integration", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, nil)
	require.NoError(t, err, "connect to boxsh --rpc")
	t.Cleanup(func() { assert.NoError(t, session.Close(), "close the session") })
	return session
}

// refusalsOf are the network refusals of a result's structured content,
// and whether it has the member at all.
func refusalsOf(t *testing.T, res *mcp.CallToolResult) ([]tool.NetworkRefusal, bool) {
	t.Helper()
	var sc map[string]json.RawMessage
	sdkStructured(t, res, &sc)
	raw, ok := sc[tool.NetworkRefusalsMember]
	if !ok {
		return nil, false
	}
	var refs []tool.NetworkRefusal
	require.NoError(t, json.Unmarshal(raw, &refs))
	return refs, true
}

// texts are the text blocks of a result.
func texts(res *mcp.CallToolResult) []string {
	var ts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			ts = append(ts, tc.Text)
		}
	}
	return ts
}

// TestNetworkRefusalsReported checks that a call during which the proxy
// refused the sandbox says so in its result. That holds for a bash call, a
// background process's read and a terminal's. sandbox_stats and the audit
// log list the refusals too, and the 403s keep their text.
func TestNetworkRefusalsReported(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org", "evil.example.org", "ads.example.org", "bg.example.org", "socks.example.org", "term.example.org")
	_, port, _ := net.SplitHostPort(addrs["registry.npmjs.org"])
	dir := t.TempDir()
	policyFile := filepath.Join(dir, ".boxsh", "policy.json")
	writeHostFile(t, policyFile, `{"network": {"deniedDomains": ["ads.example.org"]}}`, 0o644)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	s := sdkSandbox(t, ctx, dir, "--sandbox", "--network", "allowlist", "--allow-domain", "registry.npmjs.org",
		"--allow-domain", "ads.example.org", "--audit", auditPath)
	bash := func(args map[string]any) *mcp.CallToolResult {
		t.Helper()
		args["timeout"] = 30
		return sdkCall(t, ctx, s, "bash", args)
	}
	curl := func(url string, extra ...string) string {
		return "curl -sS --max-time 10 " + strings.Join(extra, " ") + " -o - -w '|%{http_code}' " + url
	}
	var out tool.BashOutput

	// Nothing refused: the result has v3's shape.
	res := bash(map[string]any{"command": curl("http://registry.npmjs.org:" + port + "/ok")})
	sdkStructured(t, res, &out)
	assert.Equal(t, "hello from registry.npmjs.org /ok|200", out.Stdout)
	var members map[string]any
	sdkStructured(t, res, &members)
	assert.ElementsMatch(t, []string{"exit_code", "stdout", "stderr", "duration_ms"}, slices.Collect(maps.Keys(members)), "no new member")
	assert.Len(t, res.Content, 1, "one text block")

	// A refused plain HTTP request: the 403 and its body as before, and
	// the refusal in the result.
	res = bash(map[string]any{"command": curl("http://evil.example.org:" + port + "/x")})
	sdkStructured(t, res, &out)
	assert.Equal(t, "boxsh: access to evil.example.org:"+port+" is not allowed by the sandbox's network policy. "+
		`To allow it, add "evil.example.org" to network.allowedDomains (or run with --allow-domain evil.example.org).`+"\n|403", out.Stdout)
	refs, _ := refusalsOf(t, res)
	evil := tool.NetworkRefusal{Host: "evil.example.org", Port: atoi(t, port), Reason: "not in the allowlist", Allow: "--allow-domain evil.example.org"}
	assert.Equal(t, []tool.NetworkRefusal{evil}, refs)
	ts := texts(res)
	require.Len(t, ts, 2, "the structured text, then the line")
	var text map[string]any
	require.NoError(t, json.Unmarshal([]byte(ts[0]), &text))
	assert.Contains(t, text, tool.NetworkRefusalsMember, "the text block repeats the structured content")
	assert.Equal(t, "[boxsh: network refused: evil.example.org:"+port+" (not in the allowlist; allow with --allow-domain evil.example.org)]", ts[1])

	// A refused CONNECT keeps its status line; SOCKS5 is reported too; a
	// denied domain names the rule and its policy file.
	res = bash(map[string]any{"command": curl("http://evil.example.org:"+port+"/t", "--proxytunnel", "-v") + "; " +
		curl("http://socks.example.org:"+port+"/s", "--proxy", "socks5h://127.0.0.1:3128") + "; " +
		curl("http://ads.example.org:"+port+"/a")})
	sdkStructured(t, res, &out)
	assert.Contains(t, out.Stderr, "403 boxsh: evil.example.org is not allowed (run with --allow-domain evil.example.org)")
	refs, _ = refusalsOf(t, res)
	require.Len(t, refs, 3, "%+v", refs)
	assert.Equal(t, evil, refs[0])
	assert.Equal(t, "socks.example.org", refs[1].Host)
	assert.Equal(t, tool.NetworkRefusal{Host: "ads.example.org", Port: atoi(t, port), Reason: `refused by the denied domain "ads.example.org"`,
		Allow: `remove "ads.example.org" from network.deniedDomains in ` + policyFile}, refs[2])

	// A background process's refusal, made after it started, is in a
	// read of its output.
	res = bash(map[string]any{"command": "while [ ! -e /tmp/go ]; do sleep 0.05; done; " + curl("http://bg.example.org:"+port+"/bg"), "background": true})
	sdkStructured(t, res, &out)
	require.NotEmpty(t, out.ID)
	bash(map[string]any{"command": "touch /tmp/go"})
	var seen []tool.NetworkRefusal
	deadline := time.Now().Add(30 * time.Second)
	for {
		res = sdkCall(t, ctx, s, "process_output", map[string]any{"id": out.ID, "wait_ms": 5000})
		var po tool.ProcessOutputResult
		sdkStructured(t, res, &po)
		refs, _ = refusalsOf(t, res)
		seen = append(seen, refs...)
		if po.State == tool.ProcessExited {
			break
		}
		require.True(t, time.Now().Before(deadline), "the background curl never exited")
	}
	require.Len(t, seen, 1, "reported once: %+v", seen)
	assert.Equal(t, "bg.example.org", seen[0].Host)

	// A terminal's.
	res = sdkCall(t, ctx, s, "run_in_terminal", map[string]any{"command": "bash"})
	var snap terminalSnapshot
	sdkStructured(t, res, &snap)
	res = sdkCall(t, ctx, s, "send_to_terminal", map[string]any{"id": snap.ID, "command": curl("http://term.example.org:"+port+"/") + "\n"})
	seen, _ = refusalsOf(t, res)
	deadline = time.Now().Add(30 * time.Second)
	for len(seen) == 0 {
		require.True(t, time.Now().Before(deadline), "the terminal's refusal was never reported")
		res = sdkCall(t, ctx, s, "get_terminal_output", map[string]any{"id": snap.ID})
		refs, _ = refusalsOf(t, res)
		seen = append(seen, refs...)
	}
	require.Len(t, seen, 1, "%+v", seen)
	assert.Equal(t, "term.example.org", seen[0].Host)
	assert.Contains(t, texts(res)[1], "term.example.org:"+port)
	res = sdkCall(t, ctx, s, "get_terminal_output", map[string]any{"id": snap.ID})
	_, has := refusalsOf(t, res)
	assert.False(t, has, "reported once")
	sdkCall(t, ctx, s, "kill_terminal", map[string]any{"id": snap.ID})

	// sandbox_stats lists them, counted.
	res = sdkCall(t, ctx, s, "sandbox_stats", map[string]any{})
	var stats tool.StatsOutput
	sdkStructured(t, res, &stats)
	byHost := map[string]tool.NetworkRefusal{}
	for _, r := range stats.NetworkRefusals {
		byHost[r.Host] = r
	}
	assert.Equal(t, 2, byHost["evil.example.org"].Count, "refused twice: %+v", stats.NetworkRefusals)
	for _, h := range []string{"socks.example.org", "ads.example.org", "bg.example.org", "term.example.org"} {
		assert.Equal(t, 1, byHost[h].Count, h)
	}
	assert.Equal(t, "not in the allowlist", byHost["bg.example.org"].Reason)

	// So does the audit log, with the reason.
	var refused []tool.AuditEntry
	for _, e := range readAudit(t, auditPath) {
		if e.Kind == tool.AuditNetwork && !*e.Allowed {
			refused = append(refused, e)
		}
	}
	require.Len(t, refused, 6, "%+v", refused)
	assert.Equal(t, "evil.example.org", refused[0].Host)
	assert.Equal(t, atoi(t, port), refused[0].Port)
	assert.Equal(t, "not in the allowlist", refused[0].Reason)
	assert.Equal(t, "--allow-domain evil.example.org", refused[0].Allow)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
