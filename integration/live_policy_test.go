//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/integration/internal/outside"
	"github.com/boxsh/boxsh/internal/tool"
)

// heldServer is a stand-in of the outside world whose /hold requests are
// answered with a first line and then held open until the connection
// closes: a long download.
type heldServer struct {
	// started gets a value when a /hold request arrives, closed when its
	// connection closes.
	started, closed chan struct{}
}

// startHeldServer starts a heldServer for name of stand-in n (see
// serveName).
func startHeldServer(t *testing.T, n *outside.Net, name string) *heldServer {
	t.Helper()
	h := &heldServer{started: make(chan struct{}, 8), closed: make(chan struct{}, 8)}
	serveName(t, n, name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hold" {
			fmt.Fprintf(w, "hello from %s %s", name, r.URL.Path)
			return
		}
		fmt.Fprintf(w, "holding\n")
		w.(http.Flusher).Flush()
		h.started <- struct{}{}
		<-r.Context().Done()
		h.closed <- struct{}{}
	}), false)
	return h
}

// waitChan waits for a value of c, or fails the test after d.
func waitChan(t *testing.T, c <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
	}
}

// patchNetwork sends a change of sandbox name's lists with token.
func (m *manyBoxsh) patchNetwork(t *testing.T, name, token string, c apitype.NetworkChange) (int, apitype.NetworkPolicy, string) {
	t.Helper()
	status, body := m.do(t, http.MethodPatch, "/v1/sandboxes/"+name+"/network", token, c)
	var p apitype.NetworkPolicy
	if status == http.StatusOK {
		require.NoError(t, json.Unmarshal(body, &p), "%s", body)
	}
	return status, p, string(body)
}

// A server of many sandboxes changes a running sandbox's network lists:
// new connections follow them at once, narrowing closes the open tunnels
// they refuse, the sandbox's own token and the sandbox itself cannot change
// them, the audit log has each change, and the management MCP tool does
// the same.
func TestLivePolicySandboxes(t *testing.T) {
	ctx := testContext(t)
	n := standIn(t, outside.Config{Names: []string{"a.example", "b.example", "c.example"}})
	b := startHeldServer(t, n, "b.example")
	a := startHeldServer(t, n, "a.example")
	startHeldServer(t, n, "c.example")
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	m := startMany(t, ctx, "--audit", auditPath, "--network", "allowlist", "--allow-domain", "a.example")
	info := m.create(t, "alpha", "empty")
	s := m.connect(t, ctx, info.Endpoint, info.Token, "")
	curl := func(url string, extra ...string) string {
		return sh(t, ctx, s, "curl -sS --max-time 10 "+strings.Join(extra, " ")+" -o - -w '|%{http_code}' "+url+" 2>&1; true")
	}

	assert.Equal(t, "hello from a.example /x|200", curl("http://a.example/x"))
	assert.Contains(t, curl("http://b.example/x"), "|403", "b is not allowed yet")

	// GET: the lists, each rule with its source.
	status, body := m.do(t, http.MethodGet, "/v1/sandboxes/alpha/network", m.token, nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var p apitype.NetworkPolicy
	require.NoError(t, json.Unmarshal(body, &p))
	assert.Equal(t, apitype.NetworkPolicy{Mode: "allowlist", Allow: []apitype.NetworkRule{{Pattern: "a.example", Source: "--allow-domain"}}, Deny: []apitype.NetworkRule{}}, p)

	// Widening: b works without a restart.
	status, p, msg := m.patchNetwork(t, "alpha", m.token, apitype.NetworkChange{AddAllow: []string{"b.example"}})
	require.Equal(t, http.StatusOK, status, msg)
	assert.Regexp(t, `^rest 127\.0\.0\.1:\d+$`, p.Allow[1].Source)
	assert.Equal(t, "hello from b.example /x|200", curl("http://b.example/x"), "allowed at once")

	// A bad pattern is refused, naming it, and changes nothing.
	status, _, msg = m.patchNetwork(t, "alpha", m.token, apitype.NetworkChange{AddAllow: []string{"*.com"}})
	assert.Equal(t, http.StatusBadRequest, status, msg)
	assert.Contains(t, msg, `*.com`)

	// The sandbox's own token changes nothing: neither at the management
	// path (not the server's token) nor at its own endpoint.
	status, _, msg = m.patchNetwork(t, "alpha", info.Token, apitype.NetworkChange{AddAllow: []string{"c.example"}})
	assert.Equal(t, http.StatusUnauthorized, status, msg)
	status, body = m.do(t, http.MethodPatch, "/s/alpha/v1/network", info.Token, apitype.NetworkChange{AddAllow: []string{"c.example"}})
	assert.Equal(t, http.StatusForbidden, status, "%s", body)
	assert.Contains(t, curl("http://c.example/x"), "|403")

	// Nor can the sandbox reach the front's listener: not directly (its
	// own network namespace), not through the proxy, even with the
	// listener's address allowed (the proxy refuses the host's loopback).
	host := strings.TrimPrefix(m.base, "http://")
	status, _, msg = m.patchNetwork(t, "alpha", m.token, apitype.NetworkChange{AddAllow: []string{host}})
	require.Equal(t, http.StatusOK, status, msg)
	patch := "-X PATCH -H 'Authorization: Bearer " + m.token + "' -H 'Content-Type: application/json' -d '{\"add_allow\":[\"c.example\"]}'"
	out := curl(m.base+"/v1/sandboxes/alpha/network", patch)
	assert.NotContains(t, out, `"mode"`, "the sandbox reached the management API through the proxy: %s", out)
	out = curl(m.base+"/v1/sandboxes/alpha/network", patch, "--noproxy", "'*'")
	assert.NotContains(t, out, `"mode"`, "the sandbox reached the management API directly: %s", out)
	status, _, msg = m.patchNetwork(t, "alpha", m.token, apitype.NetworkChange{RemoveAllow: []string{host}})
	require.Equal(t, http.StatusOK, status, msg)
	assert.Contains(t, curl("http://c.example/x"), "|403", "unchanged")

	// Narrowing closes the open tunnel to b (a held CONNECT), not the
	// one to a.
	var bg tool.BashOutput
	sdkOK(t, ctx, s, "bash", map[string]any{"command": "curl -sS -N --proxytunnel http://b.example/hold", "background": true}, &bg)
	waitChan(t, b.started, 20*time.Second, "the tunnel to b")
	sdkOK(t, ctx, s, "bash", map[string]any{"command": "curl -sS -N --proxytunnel http://a.example/hold", "background": true}, &bg)
	waitChan(t, a.started, 20*time.Second, "the tunnel to a")
	status, p, msg = m.patchNetwork(t, "alpha", m.token, apitype.NetworkChange{RemoveAllow: []string{"b.example"}})
	require.Equal(t, http.StatusOK, status, msg)
	assert.Equal(t, 1, p.Closed, "the tunnel to b")
	waitChan(t, b.closed, 10*time.Second, "the tunnel to b closed")
	select {
	case <-a.closed:
		t.Error("the tunnel to a was closed")
	default:
	}
	assert.Contains(t, curl("http://b.example/x"), "|403", "b refused again")

	// A replacement, through the management MCP tool (the Go SDK).
	ms := m.connect(t, ctx, "/v1/manage/mcp", m.token, "")
	var got apitype.NetworkPolicy
	sdkOK(t, ctx, ms, tool.SandboxNetwork, map[string]any{"sandbox": "alpha", "allow": []string{"a.example", "c.example"}, "deny": []string{"x.c.example"}}, &got)
	assert.Equal(t, []apitype.NetworkRule{{Pattern: "a.example", Source: "--allow-domain"}, {Pattern: "c.example", Source: got.Allow[1].Source}}, got.Allow)
	assert.Equal(t, "x.c.example", got.Deny[0].Pattern)
	assert.Equal(t, "hello from c.example /x|200", curl("http://c.example/x"))
	sdkOK(t, ctx, ms, tool.SandboxNetwork, map[string]any{"sandbox": "alpha"}, &got)
	assert.Len(t, got.Allow, 2, "a read")
	res := sdkCall(t, ctx, ms, tool.SandboxNetwork, map[string]any{"sandbox": "alpha", "remove_deny": []string{"nope.example"}})
	assert.True(t, res.IsError)
	assert.Contains(t, sdkText(t, res), "nope.example")

	// The audit log has every change asked, with the lists before and
	// after.
	var changes []tool.AuditEntry
	for _, e := range readAudit(t, auditPath) {
		if e.Kind == tool.AuditSandbox && e.Tool == "network" {
			changes = append(changes, e)
		}
	}
	require.Len(t, changes, 7, "%+v", changes)
	for _, e := range changes {
		assert.Equal(t, "alpha", e.Sandbox)
	}
	first := changes[0]
	assert.Equal(t, []any{"b.example"}, first.Args["add_allow"])
	assert.Equal(t, map[string]any{"allow": []any{"a.example"}, "deny": []any{}}, first.Args["before"])
	assert.Equal(t, map[string]any{"allow": []any{"a.example", "b.example"}, "deny": []any{}}, first.Args["after"])
	assert.NotEmpty(t, changes[1].Error, "the bad pattern")
	assert.Equal(t, float64(1), changes[4].Args["closed"])
	assert.NotContains(t, changes[5].Client, "rest ", "the MCP tool's client")
}

// A network lists change is refused with why for a sandbox whose network
// mode has no lists.
func TestLivePolicyNoLists(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx, "--network", "disabled")
	m.create(t, "alpha", "empty")
	status, body := m.do(t, http.MethodPatch, "/v1/sandboxes/alpha/network", m.token, apitype.NetworkChange{AddAllow: []string{"a.example"}})
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, string(body), "disabled")
	status, _ = m.do(t, http.MethodGet, "/v1/sandboxes/nosuch/network", m.token, nil)
	assert.Equal(t, http.StatusNotFound, status)
}

// A stdio server re-reads its policy files on SIGHUP: the next request
// follows the new lists; a file the sandbox could write only narrows them;
// a bad file keeps those in force.
func TestLivePolicyStdioSIGHUP(t *testing.T) {
	ctx := testContext(t)
	fakeInternet(t, "a.example", "b.example", "c.example")
	dir := t.TempDir()
	policyFile := filepath.Join(t.TempDir(), "policy.json")
	writePolicy := func(content string) {
		require.NoError(t, os.WriteFile(policyFile, []byte(content), 0o644))
	}
	writePolicy(`{"network": {"mode": "allowlist", "allowedDomains": ["a.example"]}}`)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startServer(t, ctx, serverOptions{dir: dir, args: []string{"--sandbox", "--policy", policyFile, "--audit", auditPath}})
	get := func(host string) string {
		return s.bash("curl -sS --max-time 10 -o - -w '|%{http_code}' http://" + host + "/x 2>&1; true").Stdout
	}
	reloads := 0
	hup := func(want string) {
		t.Helper()
		reloads++
		require.NoError(t, s.cmd.Process.Signal(syscall.SIGHUP))
		require.Eventually(t, func() bool { return strings.Count(s.stderr.String(), "boxsh: SIGHUP: ") == reloads },
			20*time.Second, 5*time.Millisecond, "no reload: %s", s.stderr.String())
		lines := strings.Split(strings.TrimSpace(s.stderr.String()), "\n")
		assert.Contains(t, lines[len(lines)-1], want)
	}
	assert.Equal(t, "hello from a.example /x|200", get("a.example"))
	assert.Contains(t, get("b.example"), "|403")

	policyNow := func() tool.NetworkPolicyOutput {
		t.Helper()
		r := s.call(tool.NetworkPolicy, map[string]any{}).toolResult(t)
		require.False(t, r.IsError, "%+v", r.Content)
		var out tool.NetworkPolicyOutput
		require.NoError(t, json.Unmarshal(r.StructuredContent, &out))
		return out
	}
	assert.Equal(t, tool.NetworkPolicyOutput{Mode: "allowlist", Allowed: []string{"a.example"}, Denied: []string{}}, policyNow(), "the sandbox can read its lists")

	writePolicy(`{"network": {"mode": "allowlist", "allowedDomains": ["a.example", "b.example"]}}`)
	hup("network lists reloaded: allow a.example, b.example")
	assert.Equal(t, "hello from b.example /x|200", get("b.example"), "the new lists, without a restart")
	assert.Equal(t, []string{"a.example", "b.example"}, policyNow().Allowed, "network_policy tells the lists as they stand")

	// The project's file (the sandbox could write it) narrows, and its
	// widening is ignored.
	writeHostFile(t, filepath.Join(dir, ".boxsh", "policy.json"), `{"network": {"allowedDomains": ["c.example"], "deniedDomains": ["a.example"]}}`, 0o644)
	hup("deny a.example")
	assert.Contains(t, get("a.example"), "|403", "narrowed")
	assert.Contains(t, get("c.example"), "|403", "not widened")
	assert.Equal(t, "hello from b.example /x|200", get("b.example"))

	// A bad file keeps the lists in force.
	writePolicy(`{"network": {"mode": "allowlist", "allowedDomains": ["*.com"]}}`)
	hup("the network lists in force stay")
	writePolicy(`{not json`)
	hup("the network lists in force stay")
	assert.Equal(t, "hello from b.example /x|200", get("b.example"))
	s.requireServing()

	var changes int
	for _, e := range readAudit(t, auditPath) {
		if e.Kind == tool.AuditSandbox && e.Tool == "network" {
			changes++
			assert.Equal(t, "SIGHUP", e.Client)
		}
	}
	assert.Equal(t, 3, changes, "two made, one refused by a bad pattern (the unreadable file is no change)")
}

// A server of one sandbox (--listen) changes its lists at /v1/network
// with its bearer token.
func TestLivePolicyListen(t *testing.T) {
	ctx := testContext(t)
	fakeInternet(t, "a.example", "b.example")
	h := startHTTP(t, ctx, "--sandbox", "--network", "allowlist", "--allow-domain", "a.example")
	m := &manyBoxsh{httpBoxsh: h}
	status, body := m.do(t, http.MethodPatch, "/v1/network", "", apitype.NetworkChange{AddAllow: []string{"b.example"}})
	assert.Equal(t, http.StatusUnauthorized, status, "%s", body)
	status, body = m.do(t, http.MethodPatch, "/v1/network", h.token, apitype.NetworkChange{AddAllow: []string{"b.example"}})
	require.Equal(t, http.StatusOK, status, "%s", body)
	status, body = m.do(t, http.MethodGet, "/v1/network", h.token, nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var p apitype.NetworkPolicy
	require.NoError(t, json.Unmarshal(body, &p))
	assert.Equal(t, []string{"a.example", "b.example"}, []string{p.Allow[0].Pattern, p.Allow[1].Pattern})
	s := m.connect(t, ctx, "/mcp", h.token, "")
	out := sh(t, ctx, s, "curl -sS --max-time 10 -o - -w '|%{http_code}' http://b.example/x 2>&1; true")
	assert.Equal(t, "hello from b.example /x|200", out)
}
