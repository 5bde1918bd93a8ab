package tool

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func names(specs []*Spec) []string {
	var n []string
	for _, s := range specs {
		n = append(n, s.Name)
	}
	return n
}

// TestSpecs checks that clients of boxsh v3's protocol see v3's nine
// tools, with bash requiring command, and newer clients all of them.
func TestSpecs(t *testing.T) {
	r, err := NewRegistry()
	require.NoError(t, err)
	assert.Equal(t, []string{Bash, Read, Write, EditFile, RunInTerminal, SendToTerminal, GetTerminalOutput, KillTerminal, ListTerminals}, names(r.Specs()))
	assert.Equal(t, append(names(r.Specs()), List, Stat, Expose, Unexpose, Ports, ProcessOutput, ProcessKill, ProcessList, Audit, SandboxStats), names(r.AllSpecs()))

	required := func(s *Spec) []any {
		var in map[string]any
		require.NoError(t, json.Unmarshal(s.InputSchema, &in))
		return in["required"].([]any)
	}
	assert.Equal(t, []any{"command"}, required(r.Specs()[0]), "v3 bash requires command")
	assert.Empty(t, required(r.AllSpecs()[0]), "bash takes command or args")
	for _, name := range []string{List, Stat} {
		s, ok := r.Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, []any{"path"}, required(s), name)
		assert.NotEmpty(t, s.OutputSchema, name)
		assert.True(t, s.Annotations.ReadOnlyHint, name)
	}
}

func TestValidateBashCommandOrArgs(t *testing.T) {
	r, err := NewRegistry()
	require.NoError(t, err)
	bash, _ := r.Lookup(Bash)
	for args, want := range map[string]string{
		`{"command":"true"}`:                 "",
		`{"args":["true"]}`:                  "",
		`{}`:                                 "bash tool missing string field: command (or array field: args)",
		`{"cwd":"/"}`:                        "bash tool missing string field: command (or array field: args)",
		`{"command":"true","args":["true"]}`: "bash tool: fields command and args are exclusive: give only one",
		`{"command":"","args":["true"]}`:     "bash tool: fields command and args are exclusive: give only one",
		`{"args":[]}`:                        "bash tool: field args must have at least 1 item(s)",
		`{"args":"true"}`:                    "bash tool: field args must be an array, got string",
		`{"args":["a",1]}`:                   "bash tool: field args[1] must be a string, got integer",
	} {
		err := bash.Validate(json.RawMessage(args))
		if want == "" {
			assert.NoError(t, err, args)
		} else {
			assert.EqualError(t, err, want, args)
		}
	}
}

func TestValidateMinimum(t *testing.T) {
	r, err := NewRegistry()
	require.NoError(t, err)
	list, _ := r.Lookup(List)
	assert.NoError(t, list.Validate(json.RawMessage(`{"path":".","depth":0,"limit":1000000}`)))
	assert.EqualError(t, list.Validate(json.RawMessage(`{"path":".","depth":-1}`)), "list tool: field depth must be at least 0, got -1")
	assert.EqualError(t, list.Validate(json.RawMessage(`{"path":".","limit":-5}`)), "list tool: field limit must be at least 0, got -5")
	assert.EqualError(t, list.Validate(json.RawMessage(`{"depth":1}`)), "list tool missing string field: path")
	stat, _ := r.Lookup(Stat)
	assert.EqualError(t, stat.Validate(json.RawMessage(`{"path":3}`)), "stat tool: field path must be a string, got integer")
}

func TestValidateWriteEncoding(t *testing.T) {
	r, err := NewRegistry()
	require.NoError(t, err)
	write, _ := r.Lookup(Write)
	for _, enc := range []string{"utf8", "text", "base64"} {
		assert.NoError(t, write.Validate(json.RawMessage(`{"path":"p","content":"c","encoding":"`+enc+`"}`)), enc)
	}
	assert.EqualError(t, write.Validate(json.RawMessage(`{"path":"p","content":"c","encoding":"hex"}`)),
		"write tool: field encoding must be one of [utf8 text base64], got hex")
}

// TestRegistryReadsAsEncodingJSON checks that the specs hold every tool's
// schemas of schemas.json, the input schemas decoded at their first use as
// encoding/json decodes them.
func TestRegistryReadsAsEncodingJSON(t *testing.T) {
	var all map[string]schemas
	require.NoError(t, json.Unmarshal(schemasJSON, &all))
	r, err := NewRegistry()
	require.NoError(t, err)
	require.Len(t, r.AllSpecs(), len(all))
	for _, s := range r.AllSpecs() {
		want := all[s.Name]
		var in map[string]any
		require.NoError(t, json.Unmarshal(want.Input, &in))
		assert.Equal(t, in, s.input(), s.Name)
		assert.JSONEq(t, string(want.Input), string(s.InputSchema), s.Name)
		if len(want.Output) > 0 {
			assert.JSONEq(t, string(want.Output), string(s.OutputSchema), s.Name)
		} else {
			assert.Empty(t, s.OutputSchema, s.Name)
		}
	}
}

func TestSplitSchemasRefusesMalformed(t *testing.T) {
	for _, b := range []string{``, `[]`, `{"bash":`, `{"bash":[]}`, `{"bash":{"inputSchema":}}`} {
		_, err := splitSchemas([]byte(b))
		assert.Error(t, err, b)
	}
	all, err := splitSchemas([]byte(`{"t":{"inputSchema":{"type":"object"},"outputSchema":{}}}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object"}`, string(all["t"].Input))
	assert.JSONEq(t, `{}`, string(all["t"].Output))
}
