package rpc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/jsontest"
)

// modernParams are params carrying the per-request fields of 2026-07-28.
func modernParams(version, extra string) string {
	p := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
	if extra != "" {
		p += "," + extra
	}
	return p + "}"
}

func modernReq(id, method, extra string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, modernParams("2026-07-28", extra))
}

func TestModernDiscover(t *testing.T) {
	resps := serve(t, modernReq(`"d"`, "server/discover", "")+"\n")
	require.Len(t, resps, 1)
	require.Nil(t, resps[0].Error)
	var r struct {
		ResultType        string
		SupportedVersions []string
		Capabilities      map[string]any
		Meta              map[string]struct{ Name, Version string } `json:"_meta"`
		TTLMs             int                                       `json:"ttlMs"`
		CacheScope        string
	}
	require.NoError(t, json.Unmarshal(resps[0].Result, &r))
	assert.Equal(t, "complete", r.ResultType)
	assert.Equal(t, []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, r.SupportedVersions)
	assert.Contains(t, r.Capabilities, "tools")
	assert.Equal(t, "boxsh", r.Meta[metaServerInfo].Name)
	assert.Positive(t, r.TTLMs)
	assert.Equal(t, "private", r.CacheScope)
}

func TestModernListAndCall(t *testing.T) {
	resps := serve(t, modernReq("1", "tools/list", "")+"\n"+
		modernReq("2", "tools/call", `"name":"bash","arguments":{"command":"hi"}`)+"\n")
	require.Len(t, resps, 2)
	byID := map[string]response{}
	for _, r := range resps {
		byID[string(r.ID)] = r
	}
	var list struct {
		ResultType string
		Tools      []struct{ Name string }
		TTLMs      int `json:"ttlMs"`
		CacheScope string
		Meta       map[string]any `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(byID["1"].Result, &list))
	assert.Equal(t, "complete", list.ResultType)
	assert.NotEmpty(t, list.Tools)
	assert.Positive(t, list.TTLMs)
	assert.Contains(t, list.Meta, metaServerInfo)

	var res struct {
		ResultType        string
		StructuredContent struct{ Stdout string }
		Meta              map[string]any `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(byID["2"].Result, &res), string(byID["2"].Result))
	assert.Equal(t, "complete", res.ResultType)
	assert.Equal(t, "hi", res.StructuredContent.Stdout)
	assert.Contains(t, res.Meta, metaServerInfo)
}

func TestModernErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		msg  string
		id   string
		code int
	}{
		"unsupported version":   {`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":` + modernParams("1900-01-01", "") + `}`, "5", CodeUnsupportedProtocolVersion},
		"version not a string":  {`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`, "5", CodeInvalidParams},
		"no capabilities":       {`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "5", CodeInvalidParams},
		"bad client info":       {`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":3}}}`, "5", CodeInvalidParams},
		"ping removed":          {modernReq("6", "ping", ""), "6", CodeMethodNotFound},
		"initialize removed":    {modernReq("6", "initialize", ""), "6", CodeMethodNotFound},
		"unknown method":        {modernReq(`"x"`, "nope/nope", ""), `"x"`, CodeMethodNotFound},
		"jsonrpc missing":       {`{"id":8,"method":"tools/list","params":` + modernParams("2026-07-28", "") + `}`, "8", CodeInvalidRequest},
		"null id":               {`{"jsonrpc":"2.0","id":null,"method":"tools/list","params":` + modernParams("2026-07-28", "") + `}`, "null", CodeInvalidRequest},
		"bad arguments":         {modernReq("9", "tools/call", `"name":"bash","arguments":{"command":1}`), "9", CodeInvalidParams},
		"discover without meta": {`{"jsonrpc":"2.0","id":3,"method":"server/discover"}`, "3", CodeInvalidParams},
	} {
		t.Run(name, func(t *testing.T) {
			resps := serve(t, tc.msg+"\n")
			require.Len(t, resps, 1)
			require.NotNil(t, resps[0].Error, "result %s", resps[0].Result)
			assert.Equal(t, tc.code, resps[0].Error.Code, resps[0].Error.Message)
			assert.Equal(t, tc.id, string(resps[0].ID))
		})
	}
}

func TestUnsupportedVersionData(t *testing.T) {
	resps := serve(t, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":`+modernParams("2099-01-01", "")+"}\n")
	require.Len(t, resps, 1)
	require.NotNil(t, resps[0].Error)
	var data struct {
		Supported []string
		Requested string
	}
	require.NoError(t, json.Unmarshal(resps[0].Error.Data, &data))
	assert.Equal(t, "2099-01-01", data.Requested)
	assert.Equal(t, supportedVersions(), data.Supported)
}

// TestModernNotificationUnanswered checks that a modern message without id
// is a notification, and is never answered.
func TestModernNotificationUnanswered(t *testing.T) {
	resps := serve(t, `{"jsonrpc":"2.0","method":"tools/list","params":`+modernParams("2026-07-28", "")+"}\n"+modernReq("2", "tools/list", "")+"\n")
	require.Len(t, resps, 1)
	assert.Equal(t, "2", string(resps[0].ID))
}

// TestLegacyUnchangedBesideModern checks that legacy requests, and legacy
// versions named in _meta, keep v3's rules.
func TestLegacyUnchangedBesideModern(t *testing.T) {
	resps := serve(t, strings.Join([]string{
		`{"id":1,"method":"ping"}`,
		`{"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":` + modernParams("2025-11-25", "") + `}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bash","arguments":{"command":"io.modelcontextprotocol/protocolVersion"}}}`,
	}, "\n")+"\n")
	require.Len(t, resps, 4)
	byID := map[string]response{}
	for _, r := range resps {
		require.Nil(t, r.Error, "%s", r.ID)
		byID[string(r.ID)] = r
	}
	assert.JSONEq(t, `{}`, string(byID["1"].Result))
	assert.JSONEq(t, `{}`, string(byID["null"].Result))
	assert.NotContains(t, string(byID["2"].Result), "resultType")
	assert.NotContains(t, string(byID["3"].Result), "resultType")
}

func TestNotificationWithID(t *testing.T) {
	resps := serve(t, `{"jsonrpc":"2.0","id":4,"method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	require.Len(t, resps, 1)
	assert.Equal(t, "4", string(resps[0].ID))
	require.NotNil(t, resps[0].Error)
	assert.Equal(t, CodeInvalidRequest, resps[0].Error.Code)
}

func TestNonStringMethodKeepsID(t *testing.T) {
	resps := serve(t, `{"jsonrpc":"2.0","id":"m1","method":123}`+"\n"+`{"jsonrpc":"2.0","id":9,"method":{"a":1},"params":{}}`+"\n")
	require.Len(t, resps, 2)
	for i, want := range []string{`"m1"`, "9"} {
		require.NotNil(t, resps[i].Error)
		assert.Equal(t, CodeInvalidRequest, resps[i].Error.Code)
		assert.Equal(t, want, string(resps[i].ID))
	}
}

func TestWrapResult(t *testing.T) {
	m := &modernResults{meta: []byte(`{"k":1}`)}
	assert.JSONEq(t, `{"resultType":"complete","_meta":{"k":1}}`, string(m.wrap([]byte(`{}`))))
	assert.JSONEq(t, `{"resultType":"complete","_meta":{"k":1},"a":[1]}`, string(m.wrap([]byte(` {"a":[1]} `))))
	// A result's own _meta gets the server's members: one _meta, with both.
	assert.JSONEq(t, `{"resultType":"complete","_meta":{"own":true,"k":1},"a":1}`, string(m.wrap([]byte(`{"a":1,"_meta":{"own":true}}`))))
	assert.JSONEq(t, `{"resultType":"complete","_meta":{"k":2}}`, string(m.wrap([]byte(`{"_meta":{"k":2}}`))))
	for _, in := range []string{`{"_meta":{"own":true}}`, `{"resultType":"task","a":1}`, `{"_meta":null}`} {
		assert.NoError(t, jsontest.UniqueKeys(m.wrap([]byte(in))), in)
	}
	assert.JSONEq(t, `{"k":1,"io.modelcontextprotocol/subscriptionId":"L1"}`, string(m.metaWith([]byte(`{"io.modelcontextprotocol/subscriptionId":"L1"}`))))
	assert.Equal(t, `{"k":1}`, string(m.metaWith([]byte(`{}`))))
}
