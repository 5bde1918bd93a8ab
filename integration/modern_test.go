package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modernVersion is the stateless MCP revision boxsh speaks.
const modernVersion = "2026-07-28"

// modernMeta are the per-request fields of a client pinned to version.
func modernMeta(version string) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    version,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "pinned-2026", "version": "1.0"},
	}
}

// modernParams adds the per-request fields to params.
func modernParams(params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = modernMeta(modernVersion)
	return params
}

// sdkConnect connects the official Go SDK client over stdio, pinned to
// version ("" for the SDK's default, which probes with server/discover).
func sdkConnect(t *testing.T, ctx context.Context, version string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.CommandContext(ctx, boxshPath(), "--rpc")
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	client := mcp.NewClient(&mcp.Implementation{Name: "boxsh-integration", Version: "1.0.0"}, nil)
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, opts)
	require.NoError(t, err, "connect to boxsh --rpc")
	t.Cleanup(func() { assert.NoError(t, session.Close()) })
	return session
}

// TestSDKBothErasStdio checks that the SDK's default client is dual-era. It
// probes with server/discover and stays on 2026-07-28. Pinned to
// 2025-11-25, it uses initialize.
func TestSDKBothErasStdio(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	for version, want := range map[string]string{"": modernVersion, "2025-11-25": "2025-11-25", "2025-03-26": "2025-03-26"} {
		t.Run("pin="+version, func(t *testing.T) {
			s := sdkConnect(t, ctx, version)
			init := s.InitializeResult()
			require.NotNil(t, init)
			assert.Equal(t, want, init.ProtocolVersion)
			require.NotNil(t, init.ServerInfo)
			assert.Equal(t, "boxsh", init.ServerInfo.Name)
			sdkListAndEcho(t, ctx, s, "era")
		})
	}
}

// sdkListAndEcho checks that s lists every tool and that bash runs
// "echo WORD-42" (the 42 computed by the shell) on it.
func sdkListAndEcho(t *testing.T, ctx context.Context, s *mcp.ClientSession, word string) {
	t.Helper()
	tools, err := s.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(tools.Tools), len(allToolNames))
	res := sdkCall(t, ctx, s, "bash", map[string]any{"command": "echo " + word + "-$((6*7))"})
	var out bashOutput
	sdkStructured(t, res, &out)
	assert.Equal(t, word+"-42\n", out.Stdout)
}

// TestPinnedModernClientStdio runs a raw client pinned to 2026-07-28 that
// follows the specification exactly: discover, list, call, and the errors
// of the modern era.
func TestPinnedModernClientStdio(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := startServer(t, ctx, serverOptions{})

	m := s.roundTrip("server/discover", modernParams(nil))
	require.Nil(t, m.Error, "%s", m.Raw)
	var disc struct {
		ResultType        string         `json:"resultType"`
		SupportedVersions []string       `json:"supportedVersions"`
		Capabilities      map[string]any `json:"capabilities"`
		Meta              map[string]struct {
			Name string `json:"name"`
		} `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &disc))
	assert.Equal(t, "complete", disc.ResultType)
	assert.Contains(t, disc.SupportedVersions, modernVersion)
	assert.Contains(t, disc.Capabilities, "tools")
	assert.Equal(t, "boxsh", disc.Meta["io.modelcontextprotocol/serverInfo"].Name)

	m = s.roundTrip("tools/list", modernParams(nil))
	requireToolsListAtLeast(t, m)
	assert.Contains(t, string(m.Result), `"resultType":"complete"`)
	assert.Contains(t, string(m.Result), `"ttlMs"`)

	m = s.roundTrip("tools/call", modernParams(callParams("bash", map[string]any{"command": "echo modern"})))
	assert.Equal(t, "modern\n", m.bash(t).Stdout)
	assert.Contains(t, string(m.Result), `"resultType":"complete"`)

	m = s.roundTrip("ping", modernParams(nil))
	require.NotNil(t, m.Error, "ping is removed in 2026-07-28: %s", m.Raw)
	assert.Equal(t, -32601, m.Error.Code)

	params := modernParams(nil)
	params["_meta"] = modernMeta("2099-12-31")
	m = s.roundTrip("tools/list", params)
	require.NotNil(t, m.Error, "%s", m.Raw)
	assert.Equal(t, -32022, m.Error.Code)
	var data struct {
		Error struct {
			Data struct {
				Supported []string `json:"supported"`
				Requested string   `json:"requested"`
			} `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(m.Raw, &data))
	assert.Equal(t, "2099-12-31", data.Error.Data.Requested)
	assert.Contains(t, data.Error.Data.Supported, modernVersion)

	m = s.roundTrip("tools/list", map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": modernVersion}})
	require.NotNil(t, m.Error, "missing clientCapabilities: %s", m.Raw)
	assert.Equal(t, -32602, m.Error.Code)

	// The legacy era still works on the same stream.
	requireInitializeResult(t, s.roundTrip("initialize", initializeParams("2025-11-25")), "2025-11-25")
	s.requireServing()
}

// requireToolsListAtLeast checks a tools/list answer names at least the
// nine tools (other helpers may add more).
func requireToolsListAtLeast(t *testing.T, m message) {
	t.Helper()
	assert.Subset(t, toolNames(t, m), allToolNames)
}

// TestFuzzEdgeCases checks the edge cases a fuzz run found, in both eras.
func TestFuzzEdgeCases(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := startServer(t, ctx, serverOptions{})
	for _, modern := range []bool{false, true} {
		params := func(p map[string]any) map[string]any {
			if modern {
				return modernParams(p)
			}
			return p
		}
		// A huge timeout runs the command instead of timing out at once.
		for _, timeout := range []float64{1e10, 1e18, 1e300} {
			start := time.Now()
			m := s.roundTrip("tools/call", params(callParams("bash", map[string]any{"command": "echo ran", "timeout": timeout})))
			out := m.bash(t)
			assert.Equal(t, 0, out.ExitCode, "timeout %g: %+v", timeout, out)
			assert.Equal(t, "ran\n", out.Stdout, "timeout %g", timeout)
			assert.Less(t, time.Since(start), 30*time.Second)
		}
		// A notification method with an id gets an answer.
		id := s.newID()
		s.request(id, "notifications/initialized", params(nil))
		m := s.expect(strconv.Quote(id))
		require.NotNil(t, m.Error, "%s", m.Raw)
		assert.Equal(t, -32600, m.Error.Code)
	}
	// A non-string method is refused with the request's id.
	s.send([]byte(`{"jsonrpc":"2.0","id":"m-123","method":123}`))
	m := s.expect(`"m-123"`)
	require.NotNil(t, m.Error, "%s", m.Raw)
	assert.Equal(t, -32600, m.Error.Code)
	s.requireServing()
}
