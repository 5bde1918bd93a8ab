package rpc

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/largecall"
	"github.com/boxsh/boxsh/internal/tool"
)

// FuzzLargeRequest checks the front's fast paths for big writes against
// encoding/json. Its requests are large, with fuzzed text at each place
// between their members. Each fast path must decode what encoding/json
// decodes:
//   - the request (largecall.UnmarshalRequest);
//   - the tools/call params (largecall.UnmarshalCallParams);
//   - the era (requestEra);
//   - the HTTP routing name (largecall.UnmarshalMembers).
//
// largecall.Validate trusts the arguments to be valid JSON. It must judge
// them as tool.Spec.Validate does, so that the front never passes
// arguments it would have refused.
func FuzzLargeRequest(f *testing.F) {
	f.Add("", "", "", "", "")
	f.Add(`"ID":2,`, `"Name":"bash",`, `,"PATH":"/y"`, `,"_meta":{"progressToken":1}`, `,"params":null`)
	f.Add(`"id":null,"id":"a\u00e9",`, `"name":null,"name":"write",`, ` `, `,"arguments":null`, ` `)
	f.Add(`"jsonrpc":1,`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`, `,"n":[1e999]`, `,"Arguments":{}`, `}{`)
	f.Add("", `"name":"wr\u0069te",`, "\xff", `,"x":"\ud800"`, `,"method":"x"`)
	f.Fuzz(func(t *testing.T, a, b, c, d, e string) {
		msg := []byte(`{"jsonrpc":"2.0",` + a + `"id":1,"method":"tools/call","params":{` + b +
			`"name":"write","arguments":{"path":"/x","content":` + bigString + c + `}` + d + `}` + e + `}`)
		var want, got request
		wantErr := json.Unmarshal(msg, &want)
		gotErr := largecall.UnmarshalRequest(msg, &got)
		require.Equal(t, wantErr == nil, gotErr == nil, "%v / %v", wantErr, gotErr)
		if wantErr != nil {
			return
		}
		require.Equal(t, want, got)

		var wp, gp callParams
		wErr := json.Unmarshal(want.Params, &wp)
		gErr := largecall.UnmarshalCallParams(got.Params, &gp)
		require.Equal(t, wErr == nil, gErr == nil, "%v / %v", wErr, gErr)
		require.Equal(t, wp.Name, gp.Name)
		require.Equal(t, string(wp.Arguments), string(gp.Arguments))
		require.Equal(t, string(wp.Meta), string(gp.Meta))

		// requestEra, and the routing name, as on the same params with a
		// small content, below the fast paths.
		small := bytes.Replace(want.Params, []byte(bigString), []byte(`"x"`), 1)
		require.Less(t, len(small), largecall.Large)
		wm, wok, werr := requestEra(small)
		gm, gok, gerr := requestEra(got.Params)
		require.Equal(t, wm, gm)
		require.Equal(t, wok, gok)
		require.Equal(t, werr, gerr)

		type nameOf struct {
			Name   any `json:"name"`
			TaskID any `json:"taskId"`
		}
		var wn, gn nameOf
		wnErr := json.Unmarshal(small, &wn)
		gnErr := largecall.UnmarshalMembers(got.Params, &gn, "name", "taskId")
		require.Equal(t, wnErr == nil, gnErr == nil, "%v / %v", wnErr, gnErr)
		require.Equal(t, wn, gn)

		if name, ok := gp.Name.(string); ok && gErr == nil {
			tools, err := tool.NewRegistry()
			require.NoError(t, err)
			if spec, ok := tools.Lookup(name); ok {
				require.Equal(t, spec.Validate(wp.Arguments), largecall.Validate(spec, gp.Arguments, true))
			}
		}
	})
}
