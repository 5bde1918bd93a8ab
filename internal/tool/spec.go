package tool

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
)

// Annotations are the MCP tool annotations.
type Annotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
}

// Spec describes one tool as tools/list shows it. Its schemas are derived
// from the tool's Go types at their first use in the process: a client's
// first call needs only its tool's.
type Spec struct {
	Name        string
	Description string
	Annotations Annotations

	// info is the tool's definition.
	info *Info
	// schemas are the derived schemas; input, when set, is the input
	// schema shown instead (the v3 list's bash, see withRequired).
	schemas func() derived
	input   json.RawMessage
	// oneOf are members of which exactly one is required.
	oneOf []string
}

// Info is the tool's definition.
func (s *Spec) Info() *Info { return s.info }

// InputSchema is the JSON Schema of the tool's arguments.
func (s *Spec) InputSchema() json.RawMessage {
	if s.input != nil {
		return s.input
	}
	return s.derived().inputJSON
}

// OutputSchema is the JSON Schema of the tool's structured result; nil
// when it has none.
func (s *Spec) OutputSchema() json.RawMessage { return s.derived().outputJSON }

// MarshalJSON encodes s as tools/list shows it: as encoding/json encodes
// a struct of its members, without encoding the schemas again.
func (s *Spec) MarshalJSON() ([]byte, error) {
	in, out := s.InputSchema(), s.OutputSchema()
	ann, err := json.Marshal(s.Annotations)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(s.Description)+len(in)+len(out)+len(ann)+96)
	b = append(b, `{"name":`...)
	b = appendString(b, s.Name)
	b = append(b, `,"description":`...)
	b = appendString(b, s.Description)
	b = append(b, `,"inputSchema":`...)
	b = append(b, in...)
	if len(out) > 0 {
		b = append(b, `,"outputSchema":`...)
		b = append(b, out...)
	}
	b = append(b, `,"annotations":`...)
	b = append(b, ann...)
	return append(b, '}'), nil
}

// appendString appends s as encoding/json encodes a string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// derived are s's schemas, derived at their first use.
func (s *Spec) derived() derived {
	d := s.schemas()
	if d.err != nil {
		// Every tool's types are derived by the package's tests.
		panic(fmt.Sprintf("tool %s: schemas: %v", s.Name, d.err))
	}
	return d
}

// inputSchema is the input schema as encoding/json decodes it, which
// Validate reads.
func (s *Spec) inputSchema() map[string]any { return s.derived().input() }

// Registry holds the specs of the tools of one set.
type Registry struct {
	specs  []*Spec
	byName map[string]*Spec
	// v3 makes the v3 list at its first use (see Specs): only clients of
	// boxsh v3's protocol ask for it, and never on the way to a first
	// call.
	v3 func() []*Spec
}

// NewRegistry makes the registry of the tools of a sandbox (SandboxSet).
func NewRegistry() (*Registry, error) { return NewRegistryOf(SandboxSet) }

// NewRegistryOf makes the registry of the tools of set.
func NewRegistryOf(set Set) (*Registry, error) {
	es := entries(set)
	r := &Registry{byName: make(map[string]*Spec, len(es))}
	for _, e := range es {
		if _, dup := r.byName[e.Name]; dup {
			return nil, fmt.Errorf("tool %s: defined twice", e.Name)
		}
		s := &Spec{Name: e.Name, Description: e.Description, Annotations: e.Annotations, info: e.Info, schemas: e.schemas, oneOf: e.OneOf}
		r.specs = append(r.specs, s)
		r.byName[s.Name] = s
	}
	r.v3 = sync.OnceValue(func() []*Spec {
		var v3 []*Spec
		for i, e := range es {
			if !e.BeyondV3 {
				v3 = append(v3, r.specs[i].withRequired(e.V3Required))
			}
		}
		return v3
	})
	return r, nil
}

// withRequired returns s, or when required is set, a copy of s whose input
// schema requires those members.
func (s *Spec) withRequired(required []string) *Spec {
	if required == nil {
		return s
	}
	in := maps.Clone(s.inputSchema())
	in["required"] = required
	b, err := json.Marshal(in)
	if err != nil {
		// What a JSON decoding made, strings added, always encodes.
		panic(fmt.Sprintf("tool: encode the input schema of %s: %v", s.Name, err))
	}
	c := *s
	c.input = b
	return &c
}

// Derive derives the schemas of every tool of r now, rather than at the
// first tools/list: the front calls it while boxsh-init starts.
func (r *Registry) Derive() {
	for _, s := range r.specs {
		s.derived()
	}
}

// AllSpecs returns every tool, in the order tools/list shows them.
func (r *Registry) AllSpecs() []*Spec { return r.specs }

// Specs returns the nine tools of boxsh v3, as v3 listed them. They are
// for the clients that speak v3's protocol version, since a v3 client may
// count the tools and require bash's command. The others can still be
// called.
func (r *Registry) Specs() []*Spec { return r.v3() }

// Lookup returns the named tool's spec.
func (r *Registry) Lookup(name string) (*Spec, bool) {
	s, ok := r.byName[name]
	return s, ok
}

// IsCommand tells whether the named tool runs a command on boxsh-init's
// worker pool (see Info.Command).
func (r *Registry) IsCommand(name string) bool {
	s, ok := r.byName[name]
	return ok && s.info.Command
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

// ValidateDecoded is Validate for arguments v already decoded, as
// json.Unmarshal decodes them into an any. Strings may be given as their
// JSON text instead, quotes included. largecall gives long strings so.
// Only their type matters here: no long string is one of an enum's
// values, and an error about one shows its JSON text.
func (s *Spec) ValidateDecoded(v any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s tool: arguments must be an object, got %s", s.Name, jsonType(v))
	}
	if err := validateObject(s.Name+" tool", "", s.inputSchema(), obj); err != nil {
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
	props, _ := s.inputSchema()["properties"].(map[string]any)
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
