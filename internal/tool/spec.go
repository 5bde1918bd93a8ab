package tool

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
)

//go:generate go test . -run TestSchemasGenerated -update

// schemasJSON holds the input and output JSON Schemas of every tool,
// generated from the Go types of args.go with huma's schema registry by
// TestSchemasGenerated (go generate ./tool), which also fails when the
// file no longer matches the types. Generating them at build time keeps
// huma out of boxsh-init and off the path of every start; only the front's
// REST twin (rpc/rest.go) links it, to serve them as OpenAPI.
//
//go:embed schemas.json
var schemasJSON []byte

// schemas are a tool's schemas as schemas.json holds them.
type schemas struct {
	Input  json.RawMessage `json:"inputSchema"`
	Output json.RawMessage `json:"outputSchema,omitempty"`
}

// The names of the tools: the nine of boxsh v3, then list and stat.
const (
	Bash              = "bash"
	Read              = "read"
	Write             = "write"
	EditFile          = "edit"
	RunInTerminal     = "run_in_terminal"
	SendToTerminal    = "send_to_terminal"
	GetTerminalOutput = "get_terminal_output"
	KillTerminal      = "kill_terminal"
	ListTerminals     = "list_terminals"
	List              = "list"
	Stat              = "stat"
)

// Annotations are the MCP tool annotations.
type Annotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
}

// Spec describes one tool as tools/list shows it.
type Spec struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  Annotations     `json:"annotations"`

	// input is the schema in decoded form, for Validate, decoded at its
	// first use: most tools of a session are never called.
	input func() map[string]any
	// oneOf are members of which exactly one is required.
	oneOf []string
}

// def is the Go-typed definition a Spec is generated from.
type def struct {
	name, description string
	in, out           any
	ann               Annotations
	// beyondV3 marks the tools boxsh v3 does not have, which the v3 list
	// leaves out (see Registry.V3Specs).
	beyondV3 bool
	// oneOf are members of which exactly one is required; v3Required is
	// what the v3 list shows as required instead.
	oneOf, v3Required []string
}

var defs = []def{
	{name: Bash, description: "Execute a shell command in the sandbox. Returns stdout, stderr and the exit code. Output is truncated to 10MB per stream. Give the command as command (a shell command line) or as args (an argv run without a shell), not both.",
		in: BashArgs{}, out: BashOutput{}, ann: Annotations{"Bash", false, true},
		oneOf: []string{"command", "args"}, v3Required: []string{"command"}},
	{name: Read, description: "Read the contents of a file. Text files are returned with offset/limit paging; images are returned as image content; other binary files as metadata.",
		in: ReadArgs{}, out: ReadOutput{}, ann: Annotations{"Read File", true, false}},
	{name: Write, description: "Create or overwrite a file with the given content. Parent directories are created automatically if needed.",
		in: WriteArgs{}, ann: Annotations{"Write File", false, true}},
	{name: EditFile, description: "Edit a file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file.",
		in: EditArgs{}, out: EditOutput{}, ann: Annotations{"Edit File", false, false}},
	{name: RunInTerminal, description: "Start a persistent PTY session running the given command (e.g. \"bash\"). Returns a session id, initial screen output, exit status, and exit code. Use get_terminal_output to poll for further output, send_to_terminal to write to stdin, kill_terminal to terminate and free resources.",
		in: RunInTerminalArgs{}, ann: Annotations{"Run in Terminal", false, false}},
	{name: SendToTerminal, description: "Send text to an existing terminal session's PTY stdin, then wait up to 500ms for new output. Returns the updated screen snapshot, exit status, and exit code. Append \\n to execute as a shell command.",
		in: SendToTerminalArgs{}, ann: Annotations{"Send to Terminal", false, false}},
	{name: GetTerminalOutput, description: "Wait up to 500ms for new output from a terminal session, then return the current screen snapshot together with exit status and exit code. Use this to poll long-running commands until exited is true.",
		in: TerminalIDArgs{}, ann: Annotations{"Get Terminal Output", true, false}},
	{name: KillTerminal, description: "Kill a terminal session and free its resources. Returns the final screen snapshot.",
		in: TerminalIDArgs{}, ann: Annotations{"Kill Terminal", false, true}},
	{name: ListTerminals, description: "List all active terminal sessions.",
		in: NoArgs{}, ann: Annotations{"List Terminals", true, false}},
	{name: List, description: "List a directory: each entry's name, type, size, mode, modification time and symbolic link target, optionally descending depth levels, at most limit entries (truncated tells when entries were left out). Entries that the sandbox's policy refuses to read are listed as the sandbox shows them, marked with denied_by.",
		in: ListArgs{}, out: ListOutput{}, ann: Annotations{"List Directory", true, false}, beyondV3: true},
	{name: Stat, description: "Describe a path without reading it: whether it exists, its type, size, mode, modification time and symbolic link target (links are not followed).",
		in: StatArgs{}, out: StatOutput{}, ann: Annotations{"Stat Path", true, false}, beyondV3: true},
}

// Registry holds the specs of all tools, generated once from the Go types.
type Registry struct {
	specs  []*Spec
	byName map[string]*Spec
	// v3 makes the v3 list at its first use (see Specs): only clients of
	// boxsh v3's protocol ask for it, and never on the way to a first
	// call.
	v3 func() []*Spec
}

// NewRegistry makes the tool specs, with the schemas of schemas.json. It
// runs at every start of the front: each input schema is decoded at its
// first use, not here.
func NewRegistry() (*Registry, error) {
	all, err := splitSchemas(schemasJSON)
	if err != nil {
		return nil, fmt.Errorf("tool schemas: %w", err)
	}
	r := &Registry{byName: make(map[string]*Spec, len(defs))}
	for _, d := range defs {
		sc, ok := all[d.name]
		if !ok || len(sc.Input) == 0 {
			return nil, fmt.Errorf("tool schemas: no input schema of %s", d.name)
		}
		if sc.Input[0] != '{' {
			return nil, fmt.Errorf("tool schemas: the input schema of %s is not an object", d.name)
		}
		s := &Spec{Name: d.name, Description: d.description, Annotations: d.ann,
			InputSchema: sc.Input, OutputSchema: sc.Output, input: decodeSchema(sc.Input), oneOf: d.oneOf}
		r.specs = append(r.specs, s)
		r.byName[s.Name] = s
	}
	r.v3 = sync.OnceValue(func() []*Spec {
		var v3 []*Spec
		for i, d := range defs {
			if !d.beyondV3 {
				v3 = append(v3, r.specs[i].withRequired(d.v3Required))
			}
		}
		return v3
	})
	return r, nil
}

// splitSchemas returns the schemas of each tool in b, the text of
// schemas.json.
func splitSchemas(b []byte) (map[string]schemas, error) {
	var all map[string]schemas
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	return all, nil
}

// decodeSchema returns the decoding of schema, a JSON object that
// encoding/json has checked, made at its first use.
func decodeSchema(schema json.RawMessage) func() map[string]any {
	return sync.OnceValue(func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal(schema, &m); err != nil {
			// A JSON object encoding/json has read once decodes again.
			panic(fmt.Sprintf("tool: decode an input schema: %v", err))
		}
		return m
	})
}

// withRequired returns s, or when required is set, a copy of s whose input
// schema requires those members.
func (s *Spec) withRequired(required []string) *Spec {
	if required == nil {
		return s
	}
	in := maps.Clone(s.input())
	in["required"] = required
	b, err := json.Marshal(in)
	if err != nil {
		// What a JSON decoding made, strings added, always encodes.
		panic(fmt.Sprintf("tool: encode the input schema of %s: %v", s.Name, err))
	}
	c := *s
	c.InputSchema = b
	return &c
}

// AllSpecs returns every tool, in the order tools/list shows them.
func (r *Registry) AllSpecs() []*Spec { return r.specs }

// Specs returns the nine tools of boxsh v3, as v3 listed them, for the
// clients that speak v3's protocol version: a v3 client may count the
// tools, and require bash's command. The others can still be called.
func (r *Registry) Specs() []*Spec { return r.v3() }

// Lookup returns the named tool's spec.
func (r *Registry) Lookup(name string) (*Spec, bool) {
	s, ok := r.byName[name]
	return s, ok
}

// Validate checks a tool's raw arguments against its input schema: required
// members present, each member of the JSON type the schema names. Members
// the schema does not name are ignored, as boxsh v3 does. The error text is
// meant for the client.
func (s *Spec) Validate(args json.RawMessage) error {
	var v any = map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &v); err != nil {
			return fmt.Errorf("%s tool: arguments are not valid JSON: %v", s.Name, err)
		}
	}
	return s.ValidateDecoded(v)
}

// ValidateDecoded is Validate for arguments v decoded as json.Unmarshal
// decodes them into an any; but for strings that may be given as their
// JSON text, quotes included (largecall so gives long strings, whose type
// alone matters here: no long string is one of an enum's values, and an
// error about one shows its JSON text).
func (s *Spec) ValidateDecoded(v any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s tool: arguments must be an object, got %s", s.Name, jsonType(v))
	}
	if err := validateObject(s.Name+" tool", "", s.input(), obj); err != nil {
		return err
	}
	return s.validateOneOf(obj)
}

// validateOneOf checks that exactly one of the members of s.oneOf is given.
func (s *Spec) validateOneOf(obj map[string]any) error {
	if len(s.oneOf) == 0 {
		return nil
	}
	var given []string
	for _, name := range s.oneOf {
		if _, ok := obj[name]; ok {
			given = append(given, name)
		}
	}
	switch {
	case len(given) == 0:
		var alts []string
		for _, name := range s.oneOf[1:] {
			alts = append(alts, fmt.Sprintf("%s field: %s", schemaType(s.property(name)), name))
		}
		return fmt.Errorf("%s tool missing %s field: %s (or %s)", s.Name, schemaType(s.property(s.oneOf[0])), s.oneOf[0], strings.Join(alts, ", or "))
	case len(given) > 1:
		return fmt.Errorf("%s tool: fields %s are exclusive: give only one", s.Name, strings.Join(given, " and "))
	}
	return nil
}

// property is the schema of the named member of s's arguments.
func (s *Spec) property(name string) map[string]any {
	props, _ := s.input()["properties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	return p
}

func validateObject(who, path string, schema map[string]any, obj map[string]any) error {
	props, _ := schema["properties"].(map[string]any)
	required, _ := schema["required"].([]any)
	for _, r := range required {
		name, _ := r.(string)
		if _, ok := obj[name]; !ok {
			want := "a"
			if p, ok := props[name].(map[string]any); ok {
				want = schemaType(p)
			}
			return fmt.Errorf("%s missing %s field: %s%s", who, want, path, name)
		}
	}
	for name, val := range obj {
		p, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		if err := validateValue(who, path+name, p, val); err != nil {
			return err
		}
	}
	return nil
}

func validateValue(who, path string, schema map[string]any, val any) error {
	want := schemaType(schema)
	got := jsonType(val)
	switch {
	case want == got:
	case want == "integer" && got == "number":
		if f := val.(float64); f != float64(int64(f)) {
			return fmt.Errorf("%s: field %s must be an integer, got %v", who, path, f)
		}
	case want == "number" && got == "integer":
	default:
		return fmt.Errorf("%s: field %s must be %s %s, got %s", who, path, article(want), want, got)
	}
	if min, ok := schema["minimum"].(float64); ok && (got == "integer" || got == "number") && val.(float64) < min {
		return fmt.Errorf("%s: field %s must be at least %v, got %v", who, path, min, val)
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || e == val
		}
		if !found {
			return fmt.Errorf("%s: field %s must be one of %v, got %v", who, path, enum, val)
		}
	}
	switch got {
	case "object":
		if _, ok := schema["properties"]; ok {
			return validateObject(who, path+".", schema, val.(map[string]any))
		}
		if sub, ok := schema["additionalProperties"].(map[string]any); ok {
			for k, v := range val.(map[string]any) {
				if err := validateValue(who, path+"."+k, sub, v); err != nil {
					return err
				}
			}
		}
	case "array":
		items, _ := schema["items"].(map[string]any)
		arr := val.([]any)
		if min, ok := schema["minItems"].(float64); ok && float64(len(arr)) < min {
			return fmt.Errorf("%s: field %s must have at least %d item(s)", who, path, int(min))
		}
		for i, it := range arr {
			if items != nil {
				if err := validateValue(who, fmt.Sprintf("%s[%d]", path, i), items, it); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func schemaType(schema map[string]any) string {
	if t, ok := schema["type"].(string); ok {
		return t
	}
	return "any"
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func article(word string) string {
	if strings.ContainsAny(word[:1], "aeiou") {
		return "an"
	}
	return "a"
}

// NewRegistryOf makes a registry of other tools than boxsh's own (the
// management tools of a server of many sandboxes), each with its input
// schema given. Every list shows them all.
func NewRegistryOf(specs ...Spec) (*Registry, error) {
	r := &Registry{byName: make(map[string]*Spec, len(specs))}
	for i := range specs {
		s := specs[i]
		var input map[string]any
		if err := json.Unmarshal(s.InputSchema, &input); err != nil || input == nil {
			return nil, fmt.Errorf("tool %s: the input schema is not a JSON object: %v", s.Name, err)
		}
		s.input = func() map[string]any { return input }
		r.specs = append(r.specs, &s)
		r.byName[s.Name] = &s
	}
	r.v3 = func() []*Spec { return r.specs }
	return r, nil
}
