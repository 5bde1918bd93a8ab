package tool

import (
	"encoding/json"
	"slices"
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
	assert.Equal(t, Names(SandboxSet, InV3), names(r.Specs()))
	assert.Equal(t, Names(SandboxSet, nil), names(r.AllSpecs()))
	assert.Len(t, r.Specs(), 9, "boxsh v3 has nine tools")
	assert.Subset(t, names(r.AllSpecs()), names(r.Specs()))
	// The order tools/list shows the tools of boxsh 4 in, which clients
	// and suites see: a tool defined later may go anywhere, but these
	// keep their order.
	frozen := []string{"bash", "read", "write", "edit", "run_in_terminal", "send_to_terminal", "get_terminal_output", "kill_terminal", "list_terminals",
		"list", "stat", "expose", "unexpose", "ports", "process_output", "process_kill", "process_list", "audit", "sandbox_stats"}
	var kept []string
	for _, n := range names(r.AllSpecs()) {
		if slices.Contains(frozen, n) {
			kept = append(kept, n)
		}
	}
	assert.Equal(t, frozen, kept)

	required := func(s *Spec) []any {
		var in map[string]any
		require.NoError(t, json.Unmarshal(s.InputSchema(), &in))
		return in["required"].([]any)
	}
	assert.Equal(t, []any{"command"}, required(r.Specs()[0]), "v3 bash requires command")
	assert.Empty(t, required(r.AllSpecs()[0]), "bash takes command or args")
	for _, name := range []string{List, Stat} {
		s, ok := r.Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, []any{"path"}, required(s), name)
		assert.NotEmpty(t, s.OutputSchema(), name)
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

// TestRegistryDecodesAsEncodingJSON checks that Validate reads each input
// schema as encoding/json decodes the schema tools/list shows.
func TestRegistryDecodesAsEncodingJSON(t *testing.T) {
	for _, set := range []Set{SandboxSet, ManageSet} {
		r, err := NewRegistryOf(set)
		require.NoError(t, err)
		require.Equal(t, Names(set, nil), names(r.AllSpecs()))
		for _, s := range r.AllSpecs() {
			var in map[string]any
			require.NoError(t, json.Unmarshal(s.InputSchema(), &in))
			assert.Equal(t, in, s.inputSchema(), s.Name)
		}
	}
}

// TestDefinitions checks what every definition must hold:
//   - a name and an order of its own in its set;
//   - a description and a title;
//   - a v3 list that only tools of boxsh v3 are in.
func TestDefinitions(t *testing.T) {
	for _, set := range []Set{SandboxSet, ManageSet} {
		names, orders := map[string]bool{}, map[int]bool{}
		for _, in := range Infos(set, nil) {
			assert.False(t, names[in.Name], "%s defined twice", in.Name)
			assert.False(t, orders[in.Order], "%s: order %d taken", in.Name, in.Order)
			names[in.Name], orders[in.Order] = true, true
			assert.NotEmpty(t, in.Description, in.Name)
			assert.NotEmpty(t, in.Annotations.Title, in.Name)
			if set == ManageSet {
				assert.False(t, in.BeyondV3, "%s: every management tool is listed to every client", in.Name)
				assert.Equal(t, Front, in.Side, in.Name)
			}
			if in.V3Required != nil {
				assert.False(t, in.BeyondV3, in.Name)
			}
		}
	}
}
