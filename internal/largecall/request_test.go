package largecall

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
		var want, got Request
		wantErr := json.Unmarshal([]byte(msg), &want)
		gotErr := UnmarshalRequest([]byte(msg), &got)
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
		var want, got CallParams
		wantErr := json.Unmarshal([]byte(p), &want)
		gotErr := UnmarshalCallParams([]byte(p), &got)
		assert.Equal(t, wantErr, gotErr, "%.80s", p)
		require.Equal(t, want.Name, got.Name, "%.80s", p)
		require.Equal(t, string(want.Arguments), string(got.Arguments), "%.80s", p)
	}
}

// TestUnmarshalMembersMatchesEncodingJSON checks that UnmarshalMembers
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
		gotErr := UnmarshalMembers([]byte(p), &gotMeta, "_meta")
		assert.Equal(t, wantErr == nil, gotErr == nil, "%.80s", p)
		assert.Equal(t, wantMeta, gotMeta, "%.80s", p)
		var wantName, gotName nameOf
		wantErr = json.Unmarshal([]byte(p), &wantName)
		gotErr = UnmarshalMembers([]byte(p), &gotName, "name", "taskId")
		assert.Equal(t, wantErr == nil, gotErr == nil, "%.80s", p)
		assert.Equal(t, wantName, gotName, "%.80s", p)
	}
}
