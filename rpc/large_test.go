package rpc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigString is a JSON string of more than 64 KiB with escapes.
var bigString = func() string {
	b, _ := json.Marshal(strings.Repeat("line \"x\" \\ é ✓\n", 8000))
	return string(b)
}()

// TestLargeRequestsMatchEncodingJSON checks that large requests and
// tools/call params decode as encoding/json decodes them, whether the fast
// path takes them or leaves them to encoding/json.
func TestLargeRequestsMatchEncodingJSON(t *testing.T) {
	params := `{"name":"write","arguments":{"path":"/x","content":` + bigString + `}}`
	requests := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`,
		` { "params" : ` + params + ` , "method" : "tools/call" , "id" : "a\u00e9" , "jsonrpc" : "2.0" } `,
		`{"jsonrpc":"2.0","id":null,"method":null,"params":` + params + `}`,
		`{"jsonrpc":"2.0","id":1,"method":7,"params":` + params + `}`,
		`{"jsonrpc":"2.0","id":1,"Method":"x","method":"tools/call","params":` + params + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"a","method":"b","extra":[1,2],"params":` + params + `}`,
		`{"jsonrpc":2,"id":1,"method":"tools/call","params":` + params + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `,}`,
		`[` + params + `]`,
	}
	for _, msg := range requests {
		var want, got request
		wantErr := json.Unmarshal([]byte(msg), &want)
		gotErr := unmarshalRequest([]byte(msg), &got)
		assert.Equal(t, wantErr, gotErr, "%.80s", msg)
		assert.Equal(t, want, got, "%.80s", msg)
	}
	for _, p := range []string{
		params,
		`{"arguments":{"content":` + bigString + `},"name":"write","_meta":{"progressToken":1}}`,
		`{"name":7,"arguments":{"content":` + bigString + `}}`,
		`{"Name":"write","arguments":{"content":` + bigString + `}}`,
		`{"name":"write","arguments":` + bigString + `}`,
		`{"name":"write","arguments":{"content":` + bigString + `}`,
	} {
		var want, got callParams
		wantErr := json.Unmarshal([]byte(p), &want)
		gotErr := unmarshalCallParams([]byte(p), &got)
		assert.Equal(t, wantErr, gotErr, "%.80s", p)
		require.Equal(t, want.Name, got.Name, "%.80s", p)
		require.Equal(t, string(want.Arguments), string(got.Arguments), "%.80s", p)
	}
}

// TestLongLines checks that lines longer than the read buffer (256 KiB),
// at and around its size, come whole, with the messages after them, and
// that one over the limit is skipped.
func TestLongLines(t *testing.T) {
	const bufSize = 256 << 10
	var in strings.Builder
	var want []string
	for i, n := range []int{bufSize - 2, bufSize - 1, bufSize, bufSize + 1, 3*bufSize + 7, 10} {
		line := strings.Repeat(string(rune('a'+i)), n)
		want = append(want, line)
		in.WriteString(line + "\r\n")
	}
	last := strings.Repeat("z", 2*bufSize)
	want = append(want, last)
	in.WriteString(last) // no newline at the end
	rd := newReader(strings.NewReader(in.String()), 4*bufSize)
	got, errs := readAll(t, rd)
	assert.Empty(t, errs)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i], got[i], "line %d", i)
	}

	rd = newReader(strings.NewReader(strings.Repeat("x", 3*bufSize)+"\n{}\n"), 2*bufSize)
	got, errs = readAll(t, rd)
	assert.Equal(t, []string{"{}"}, got)
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], errTooLarge)
}

// TestUnmarshalMembersMatchesEncodingJSON checks that unmarshalMembers
// decodes large params as json.Unmarshal does: the _meta of a modern
// request, the name of an HTTP tools/call.
func TestUnmarshalMembersMatchesEncodingJSON(t *testing.T) {
	args := `{"path":"/x","content":` + bigString + `}`
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	type metaOf struct {
		Meta struct {
			Version json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
			Caps    json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	}
	type nameOf struct {
		Name   string `json:"name"`
		TaskID string `json:"taskId"`
	}
	for _, p := range []string{
		`{"name":"write","arguments":` + args + `,"_meta":` + meta + `}`,
		`{"_meta":` + meta + `,"name":"write","arguments":` + args + `}`,
		`{"_META":` + meta + `,"NAME":"write","arguments":` + args + `}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"1"},"_meta":{"io.modelcontextprotocol/clientCapabilities":{}},"arguments":` + args + `}`,
		`{"_meta":"x","name":7,"taskId":"t","arguments":` + args + `}`,
		`{"_meta":null,"name":null,"arguments":` + args + `}`,
		`{"arguments":` + args + `}`,
		`[` + args + `]`,
		`"` + strings.Repeat("x", 70000) + `"`,
	} {
		var wantMeta, gotMeta metaOf
		wantErr := json.Unmarshal([]byte(p), &wantMeta)
		gotErr := unmarshalMembers([]byte(p), &gotMeta, "_meta")
		assert.Equal(t, wantErr == nil, gotErr == nil, "%.80s", p)
		assert.Equal(t, wantMeta, gotMeta, "%.80s", p)
		var wantName, gotName nameOf
		wantErr = json.Unmarshal([]byte(p), &wantName)
		gotErr = unmarshalMembers([]byte(p), &gotName, "name", "taskId")
		assert.Equal(t, wantErr == nil, gotErr == nil, "%.80s", p)
		assert.Equal(t, wantName, gotName, "%.80s", p)
	}
}

// TestRequestEraOfLargeParams checks that the era of a request with large
// params is read as from the same params with a small content.
func TestRequestEraOfLargeParams(t *testing.T) {
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}`
	inContent, err := json.Marshal(`"io.modelcontextprotocol/protocolVersion"` + strings.Repeat("x", 70000))
	require.NoError(t, err)
	for _, p := range []string{
		`{"name":"write","arguments":{"path":"/x","content":%s},"_meta":` + meta + `}`,
		`{"_META":` + meta + `,"name":"write","arguments":{"path":"/x","content":%s}}`,
		`{"name":"write","arguments":{"path":"/x","content":%s}}`,
		`{"name":"write","arguments":{"path":"/x","content":%s},"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`,
		`{"name":"write","arguments":{"path":"/x","content":%s},"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}`,
	} {
		for _, content := range []string{bigString, string(inContent)} {
			wm, wok, werr := requestEra(json.RawMessage(strings.Replace(p, "%s", `"x"`, 1)))
			gm, gok, gerr := requestEra(json.RawMessage(strings.Replace(p, "%s", content, 1)))
			assert.Equal(t, wm, gm, "%.80s", p)
			assert.Equal(t, wok, gok, "%.80s", p)
			assert.Equal(t, werr, gerr, "%.80s", p)
		}
	}
}
