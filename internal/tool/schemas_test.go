package tool

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite schemas.json from the Go types")

// TestSchemasGenerated generates the tools' JSON Schemas from the Go types
// through huma's schema registry and checks that schemas.json holds them
// (go test -run TestSchemasGenerated -update rewrites it).
func TestSchemasGenerated(t *testing.T) {
	reg := huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)
	all := map[string]schemas{}
	for _, d := range defs {
		var sc schemas
		in, err := schemaOf(reg, d.in)
		require.NoError(t, err, d.name)
		sc.Input, err = json.Marshal(in)
		require.NoError(t, err)
		if d.out != nil {
			out, err := schemaOf(reg, d.out)
			require.NoError(t, err, d.name)
			sc.Output, err = json.Marshal(out)
			require.NoError(t, err)
		}
		all[d.name] = sc
	}
	want, err := json.MarshalIndent(all, "", "  ")
	require.NoError(t, err)
	want = append(want, '\n')
	if *update {
		require.NoError(t, os.WriteFile("schemas.json", want, 0o644))
		return
	}
	assert.Equal(t, string(want), string(schemasJSON), "schemas.json is stale: run go generate ./tool")
}

// schemaOf generates the JSON Schema of v's type as a plain JSON value, with
// references inlined (MCP clients expect self-contained schemas) and the
// "properties" and "required" members always present.
func schemaOf(reg huma.Registry, v any) (map[string]any, error) {
	s := huma.SchemaFromType(reg, reflect.TypeOf(v))
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

// tidy inlines $refs, drops huma's Go-specific formats and nullable arrays,
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
	if m["type"] == "object" {
		if _, ok := m["properties"]; !ok && m["additionalProperties"] != nil && m["additionalProperties"] != false {
			// a map type: leave as is
		} else {
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
