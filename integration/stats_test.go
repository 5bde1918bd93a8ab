//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/internal/tool"
)

// stats calls sandbox_stats.
func stats(t *testing.T, ctx context.Context, s *mcp.ClientSession) tool.StatsOutput {
	t.Helper()
	var out tool.StatsOutput
	sdkOK(t, ctx, s, tool.SandboxStats, map[string]any{}, &out)
	return out
}

// statsUntil calls sandbox_stats until ok holds of its answer (or fails
// the test after 20 s), and returns that answer.
func statsUntil(t *testing.T, ctx context.Context, s *mcp.ClientSession, what string, ok func(tool.StatsOutput) bool) tool.StatsOutput {
	t.Helper()
	var st tool.StatsOutput
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if st = stats(t, ctx, s); ok(st) {
			return st
		}
	}
	t.Fatalf("sandbox_stats never showed %s: last %+v", what, st)
	return st
}

// hog is a command that takes 64 MiB of memory (written, so resident) and
// keeps it.
const hog = `python3 -c 'import time; b = b"x" * (64 << 20); time.sleep(300)'`

// TestSandboxStats checks sandbox_stats over stdio and HTTP, plain and
// sandboxed (a cow bind in the sandbox). Background processes raise the
// process count and the memory. A file written in the cow bind raises the
// disk figure.
func TestSandboxStats(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "dst")
	eachServer(t, []string{"--bind", "cow:" + src + ":" + dst}, func(t *testing.T, ctx context.Context, s *mcp.ClientSession) {
		sandboxed := strings.HasSuffix(t.Name(), "/sandbox")
		// The kernel counts a process's resident pages per CPU and
		// folds them into the figure /proc shows in batches, so the
		// processes of a sandbox just started may show none yet.
		before := statsUntil(t, ctx, s, "boxsh-init's resident memory", func(st tool.StatsOutput) bool { return st.MemoryBytes > 0 })
		assert.Equal(t, tool.StatsProc, before.Source, "rootless: no cgroup of its own")
		assert.Equal(t, sandboxed, before.Sandboxed)
		assert.Positive(t, before.Processes, "boxsh-init and its shells")
		assert.Positive(t, before.UptimeSeconds)
		assert.Zero(t, before.ProxyBytesOut, "no proxy")
		assert.Zero(t, before.ProxyBytesIn)

		var sleeper, hogger tool.BashOutput
		sdkOK(t, ctx, s, "bash", map[string]any{"args": []string{"sleep", "300"}, "background": true}, &sleeper)
		sdkOK(t, ctx, s, "bash", map[string]any{"command": hog, "background": true}, &hogger)
		up := statsUntil(t, ctx, s, "the sleep and 64 MiB more", func(st tool.StatsOutput) bool {
			return st.Processes >= before.Processes+2 && st.MemoryBytes >= before.MemoryBytes+60<<20
		})
		assert.Positive(t, up.CPUUserSeconds+up.CPUSystemSeconds, "the shells and the hog ran")
		assert.Greater(t, up.UptimeSeconds, before.UptimeSeconds)
		for _, id := range []string{sleeper.ID, hogger.ID} {
			sdkOK(t, ctx, s, "process_kill", map[string]any{"id": id, "signal": "KILL"}, nil)
		}
		statsUntil(t, ctx, s, "the memory freed", func(st tool.StatsOutput) bool {
			return st.MemoryBytes < up.MemoryBytes-50<<20
		})

		if !sandboxed {
			assert.Empty(t, before.DiskDirs, "no copy-on-write bind without a sandbox")
			assert.Zero(t, before.DiskBytes)
			return
		}
		require.Equal(t, []string{dst}, before.DiskDirs)
		name := filepath.Join(dst, "mib-"+strings.ReplaceAll(t.Name(), "/", "-"))
		sdkOK(t, ctx, s, "bash", map[string]any{"command": "head -c 1048576 /dev/urandom > " + name}, nil)
		after := stats(t, ctx, s)
		assert.GreaterOrEqual(t, after.DiskBytes, before.DiskBytes+1<<20, "the MiB written in the cow bind")
		_, err := os.Stat(filepath.Join(src, filepath.Base(name)))
		assert.ErrorIs(t, err, os.ErrNotExist, "written in the writable layer only")
	})
}

// TestSandboxStatsProxy checks that the bytes through the network proxy of
// an allowlist sandbox rise with a fetch through it, over stdio and HTTP.
func TestSandboxStatsProxy(t *testing.T) {
	requireRootless(t)
	addrs := fakeInternet(t, "registry.npmjs.org")
	url := "http://registry.npmjs.org:" + strings.Split(addrs["registry.npmjs.org"], ":")[1] + "/ok"
	args := []string{"--sandbox", "--network", "allowlist", "--allow-domain", "registry.npmjs.org"}
	for name, connect := range map[string]func(context.Context) *mcp.ClientSession{
		"stdio": func(ctx context.Context) *mcp.ClientSession { return sdkStdio(t, ctx, args...) },
		"http":  func(ctx context.Context) *mcp.ClientSession { return startHTTP(t, ctx, args...).sdkHTTP(t, ctx, "") },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			s := connect(ctx)
			before := stats(t, ctx, s)
			body := sh(t, ctx, s, "curl -sS --max-time 10 "+url)
			require.Contains(t, body, "hello from registry.npmjs.org /ok")
			after := stats(t, ctx, s)
			assert.Greater(t, after.ProxyBytesOut, before.ProxyBytesOut+int64(len(url)), "the request")
			assert.Greater(t, after.ProxyBytesIn, before.ProxyBytesIn+int64(len(body)), "the answer")
		})
	}
}

// TestClientStats checks the Go client's typed call of sandbox_stats.
func TestClientStats(t *testing.T) {
	c := startClient(t, client.Options{Dir: t.TempDir()})
	st, err := c.Stats(testContext(t))
	require.NoError(t, err)
	assert.Equal(t, tool.StatsProc, st.Source)
	assert.False(t, st.Sandboxed)
	assert.Positive(t, st.Processes)
	assert.Equal(t, []string{}, st.DiskDirs)
}

// TestSandboxesStats checks that each sandbox of a server of many measures
// its own. One sandbox's processes, memory, disk and proxy bytes do not
// show in the other's. That holds through the tool on its endpoint, the
// management API and client.Server.
func TestSandboxesStats(t *testing.T) {
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org")
	url := "http://registry.npmjs.org:" + strings.Split(addrs["registry.npmjs.org"], ":")[1] + "/ok"
	m := startMany(t, ctx, "--network", "allowlist", "--allow-domain", "registry.npmjs.org")
	a, b := m.create(t, "alpha", "workspace"), m.create(t, "beta", "empty")
	sa, sb := m.connect(t, ctx, a.Endpoint, a.Token, ""), m.connect(t, ctx, b.Endpoint, b.Token, "")
	srv := client.NewServer(m.base, m.token, &http.Client{Transport: m.tr})

	idleB, err := srv.Stats(ctx, "beta")
	require.NoError(t, err)
	assert.Equal(t, []string{b.Workspace}, idleB.DiskDirs, "its own session's changes")

	sdkOK(t, ctx, sa, "bash", map[string]any{"command": hog, "background": true}, nil)
	assert.Contains(t, sh(t, ctx, sa, "head -c 1048576 /dev/urandom > mib; curl -sS --max-time 10 "+url), "hello from registry.npmjs.org /ok")
	busyA := statsUntil(t, ctx, sa, "alpha's hog", func(st tool.StatsOutput) bool { return st.MemoryBytes >= 60<<20 })
	assert.Equal(t, []string{a.Workspace}, busyA.DiskDirs)
	assert.GreaterOrEqual(t, busyA.DiskBytes, int64(1<<20))
	assert.Positive(t, busyA.ProxyBytesIn)

	// Beta's tool, the management API and the Go client see none of it.
	for name, st := range map[string]func() *tool.StatsOutput{
		"tool": func() *tool.StatsOutput { st := stats(t, ctx, sb); return &st },
		"rest": func() *tool.StatsOutput {
			status, body := m.do(t, http.MethodGet, "/v1/sandboxes/beta/stats", m.token, nil)
			require.Equal(t, http.StatusOK, status, "%s", body)
			var st tool.StatsOutput
			require.NoError(t, json.Unmarshal(body, &st))
			return &st
		},
		"client": func() *tool.StatsOutput {
			st, err := srv.Stats(ctx, "beta")
			require.NoError(t, err)
			return st
		},
	} {
		got := st()
		assert.Equal(t, []string{b.Workspace}, got.DiskDirs, name)
		assert.Less(t, got.DiskBytes, int64(1<<20), name)
		assert.Less(t, got.MemoryBytes, busyA.MemoryBytes-50<<20, name)
		assert.Less(t, got.Processes, busyA.Processes, name)
		assert.Zero(t, got.ProxyBytesIn, name)
		assert.Zero(t, got.ProxyBytesOut, name)
	}
	// Alpha's, through the management API, is alpha's.
	st, err := srv.Stats(ctx, "alpha")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, st.MemoryBytes, int64(60<<20))

	// A sandbox's token does not reach the management API, nor the
	// stats of another; a missing sandbox is a 404.
	status, _ := m.do(t, http.MethodGet, "/v1/sandboxes/alpha/stats", b.Token, nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	_, err = client.NewServer(m.base, b.Token, &http.Client{Transport: m.tr}).Stats(ctx, "alpha")
	var he *client.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusUnauthorized, he.StatusCode)
	_, err = srv.Stats(ctx, "gamma")
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusNotFound, he.StatusCode)
}
