package tool

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSchemaOfAsHuma checks that the schemas derived from every tool's Go
// types are those huma's schema registry makes of them, references
// inlined. So the tags mean what they mean to huma, which the OpenAPI
// document of the REST twin is written with.
func TestSchemaOfAsHuma(t *testing.T) {
	reg := huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)
	for _, e := range defined {
		for _, typ := range []reflect.Type{e.in, e.out} {
			if typ == nil {
				continue
			}
			want, err := humaSchema(reg, typ)
			require.NoError(t, err, e.Name)
			wantJSON, err := json.Marshal(want)
			require.NoError(t, err)
			got, err := json.Marshal(schemaOf(typ))
			require.NoError(t, err)
			assert.Equal(t, string(wantJSON), string(got), "%s: %v", e.Name, typ)
		}
	}
}

// humaSchema generates the JSON Schema of type t with huma as a plain JSON
// value, with references inlined and the "properties" and "required"
// members of objects always present.
func humaSchema(reg huma.Registry, t reflect.Type) (map[string]any, error) {
	s := huma.SchemaFromType(reg, t)
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if err := tidy(reg, m, 0); err != nil {
		return nil, err
	}
	return m, nil
}

// tidy inlines $refs, drops huma's Go-specific formats and nullable types,
// and makes object schemas explicit.
func tidy(reg huma.Registry, m map[string]any, depth int) error {
	if depth > 16 {
		return fmt.Errorf("schema nests too deeply")
	}
	if ref, ok := m["$ref"].(string); ok {
		target := reg.SchemaFromRef(ref)
		if target == nil {
			return fmt.Errorf("unresolved schema reference %q", ref)
		}
		b, err := json.Marshal(target)
		if err != nil {
			return err
		}
		delete(m, "$ref")
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
	}
	if f, ok := m["format"].(string); ok && (f == "int64" || f == "int32" || f == "double" || f == "float") {
		delete(m, "format")
	}
	if types, ok := m["type"].([]any); ok {
		var kept []any
		for _, t := range types {
			if t != "null" {
				kept = append(kept, t)
			}
		}
		if len(kept) == 1 {
			m["type"] = kept[0]
		}
	}
	if m["type"] == "object" && m["additionalProperties"] == true {
		// Allowed: what a schema that says nothing allows.
		delete(m, "additionalProperties")
	}
	if m["type"] == "object" {
		if _, ok := m["properties"]; ok || m["additionalProperties"] == nil || m["additionalProperties"] == false {
			if _, ok := m["properties"]; !ok {
				m["properties"] = map[string]any{}
			}
			if _, ok := m["required"]; !ok {
				m["required"] = []any{}
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if sub, ok := m[key].(map[string]any); ok {
			if err := tidy(reg, sub, depth+1); err != nil {
				return err
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			if sub, ok := p.(map[string]any); ok {
				if err := tidy(reg, sub, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
