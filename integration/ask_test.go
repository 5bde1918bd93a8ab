//go:build linux

package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/syncbuf"
	"github.com/boxsh/boxsh/internal/tool"
)

// askClient is an MCP client of `boxsh --rpc --network-ask` that answers
// its questions with answer (nil: it declares no elicitation capability).
type askClient struct {
	t       *testing.T
	session *mcp.ClientSession
	audit   string

	stderr syncbuf.Buffer

	mu        sync.Mutex
	questions []string
}

// startAsk starts boxsh --rpc --sandbox --network-ask, with an allowlist of
// registry.npmjs.org, and connects the official SDK's client to it.
func startAsk(t *testing.T, ctx context.Context, answer func(ctx context.Context, message string) *mcp.ElicitResult) *askClient {
	t.Helper()
	return startAskIn(t, ctx, answer, t.TempDir(), "--network-ask", "--allow-domain", "registry.npmjs.org")
}

// startAskIn starts boxsh --rpc --sandbox with args in dir, and connects
// the official SDK's client to it.
func startAskIn(t *testing.T, ctx context.Context, answer func(ctx context.Context, message string) *mcp.ElicitResult, dir string, args ...string) *askClient {
	t.Helper()
	a := &askClient{t: t, audit: filepath.Join(t.TempDir(), "audit.jsonl")}
	cmd := exec.CommandContext(ctx, boxshPath(), append([]string{"--rpc", "--sandbox", "--audit", a.audit}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = &a.stderr
	cmd.WaitDelay = 5 * time.Second
	var opts *mcp.ClientOptions
	if answer != nil {
		opts = &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.mu.Lock()
			a.questions = append(a.questions, req.Params.Message)
			a.mu.Unlock()
			return answer(ctx, req.Params.Message), nil
		}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "boxsh-ask", Version: "1.0.0"}, opts)
	// An initialize-era client: the modern era declares its capabilities
	// per request, and boxsh asks only a client that declared them in
	// initialize.
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err, "connect to boxsh --rpc")
	t.Cleanup(func() { assert.NoError(t, session.Close(), "close the session") })
	a.session = session
	return a
}

// curl fetches url in the sandbox and returns its output and HTTP status.
func (a *askClient) curl(ctx context.Context, url string) string {
	a.t.Helper()
	res := sdkCall(a.t, ctx, a.session, "bash", map[string]any{
		"command": "curl -sS --max-time 30 -o - -w '|%{http_code}' " + url, "timeout": 60})
	var out bashOutput
	sdkStructured(a.t, res, &out)
	return out.Stdout
}

// asked returns the questions asked so far.
func (a *askClient) asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.questions...)
}

// networkEntries are the network decisions of the audit log.
func (a *askClient) networkEntries() []tool.AuditEntry {
	var network []tool.AuditEntry
	for _, e := range readAudit(a.t, a.audit) {
		if e.Kind == tool.AuditNetwork {
			network = append(network, e)
		}
	}
	return network
}

// accept answers decision.
func accept(decision string) func(context.Context, string) *mcp.ElicitResult {
	return func(context.Context, string) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}
	}
}

func TestAskAllowOnce(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org", "new.example.org")
	port := strings.Split(addrs["new.example.org"], ":")[1]
	a := startAsk(t, ctx, accept("allow_once"))

	assert.Equal(t, "hello from registry.npmjs.org /|200", a.curl(ctx, "http://registry.npmjs.org:"+port+"/"))
	assert.Empty(t, a.asked(), "an allowed host is not asked about")
	assert.Equal(t, "hello from new.example.org /one|200", a.curl(ctx, "http://new.example.org:"+port+"/one"))
	assert.Equal(t, []string{"The sandbox wants to connect to new.example.org:" + port + ". Allow?"}, a.asked())
	assert.Equal(t, "hello from new.example.org /two|200", a.curl(ctx, "http://new.example.org:"+port+"/two"))
	assert.Len(t, a.asked(), 2, "allowed once: the next request asks again")

	network := a.networkEntries()
	require.Len(t, network, 3)
	assert.Empty(t, network[0].Answer)
	assert.Equal(t, "allow_once", network[1].Answer)
	assert.Equal(t, "stdio", network[1].Client)
	assert.Equal(t, "new.example.org", network[1].Host)
	assert.True(t, *network[1].Allowed)
}

// TestAskByPolicy checks network.ask: a policy file of the user's asks
// as --network-ask does (and means the allowlist), and a project's file
// that is not trusted cannot turn it on.
func TestAskByPolicy(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org", "new.example.org")
	port := strings.Split(addrs["new.example.org"], ":")[1]
	settings := `{"network": {"ask": true}}`
	own := filepath.Join(t.TempDir(), "policy.json")
	writeHostFile(t, own, settings, 0o644)
	a := startAskIn(t, ctx, accept("allow_once"), t.TempDir(), "--policy", own)
	assert.Equal(t, "hello from new.example.org /one|200", a.curl(ctx, "http://new.example.org:"+port+"/one"))
	assert.Equal(t, []string{"The sandbox wants to connect to new.example.org:" + port + ". Allow?"}, a.asked())

	project := t.TempDir()
	writeHostFile(t, filepath.Join(project, ".boxsh", "policy.json"), `{"network": {"ask": true, "mode": "allowlist"}}`, 0o644)
	b := startAskIn(t, ctx, accept("allow_once"), project)
	assert.True(t, strings.HasSuffix(b.curl(ctx, "http://new.example.org:"+port+"/two"), "is not allowed by the sandbox's network policy. To allow it, add \"new.example.org\" to network.allowedDomains (or run with --allow-domain new.example.org).\n|403"), "refused, not asked")
	assert.Empty(t, b.asked())
	assert.Contains(t, b.stderr.String(), "network.ask", "the ignored setting is named")
}

func TestAskAllowSandbox(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org", "new.example.org")
	port := strings.Split(addrs["new.example.org"], ":")[1]
	a := startAsk(t, ctx, accept("allow_sandbox"))

	assert.Equal(t, "hello from new.example.org /one|200", a.curl(ctx, "http://new.example.org:"+port+"/one"))
	assert.Equal(t, "hello from new.example.org /two|200", a.curl(ctx, "http://new.example.org:"+port+"/two"))
	assert.Len(t, a.asked(), 1, "allowed for the sandbox: asked once")
	network := a.networkEntries()
	require.Len(t, network, 2)
	assert.Equal(t, "allow_sandbox", network[0].Answer)
	assert.Empty(t, network[1].Answer)
	assert.Equal(t, "new.example.org:"+port, network[1].Rule, "the second request is allowed by the rule the answer added")
}

func TestAskDeny(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org", "new.example.org", "other.example.org")
	port := strings.Split(addrs["new.example.org"], ":")[1]
	a := startAsk(t, ctx, func(_ context.Context, message string) *mcp.ElicitResult {
		if strings.Contains(message, "other.example.org") {
			return &mcp.ElicitResult{Action: "decline"}
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny"}}
	})

	out := a.curl(ctx, "http://new.example.org:"+port+"/no")
	assert.NotContains(t, out, "hello from")
	assert.Contains(t, out, "|403")
	assert.Contains(t, out, "denied by the user")
	out = a.curl(ctx, "http://other.example.org:"+port+"/no")
	assert.Contains(t, out, "|403", "declined is denied")
	assert.Len(t, a.asked(), 2)
	network := a.networkEntries()
	require.Len(t, network, 2)
	for _, e := range network {
		assert.Equal(t, "deny", e.Answer)
		assert.Equal(t, "denied by the user", e.Reason)
		assert.False(t, *e.Allowed)
	}
}

func TestAskNoAnswerInTime(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	// The test-seam build, for its short bound on a question
	// (BOXSH_ASK_TIMEOUT), run in the stand-in like the released one.
	useTestSeamFront(t)
	addrs := fakeInternet(t, "registry.npmjs.org", "new.example.org")
	port := strings.Split(addrs["new.example.org"], ":")[1]
	t.Setenv("BOXSH_ASK_TIMEOUT", "1s")
	gone := make(chan struct{})
	t.Cleanup(func() { close(gone) })
	a := startAsk(t, ctx, func(ctx context.Context, _ string) *mcp.ElicitResult {
		select {
		case <-ctx.Done():
		case <-gone:
		}
		return &mcp.ElicitResult{Action: "cancel"}
	})

	out := a.curl(ctx, "http://new.example.org:"+port+"/late")
	assert.NotContains(t, out, "hello from")
	assert.Contains(t, out, "|403")
	assert.Len(t, a.asked(), 1)
	network := a.networkEntries()
	require.Len(t, network, 1)
	assert.Equal(t, "none", network[0].Answer)
	assert.False(t, *network[0].Allowed)
}

func TestAskClientWithoutElicitation(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org", "new.example.org")
	port := strings.Split(addrs["new.example.org"], ":")[1]
	a := startAsk(t, ctx, nil)

	start := time.Now()
	out := a.curl(ctx, "http://new.example.org:"+port+"/no")
	assert.Contains(t, out, "|403")
	assert.Less(t, time.Since(start), 30*time.Second, "refused at once, not after the 60 s bound")
	network := a.networkEntries()
	require.Len(t, network, 1)
	assert.Equal(t, "none", network[0].Answer)
	assert.False(t, *network[0].Allowed)
}
