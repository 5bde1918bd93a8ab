package tool

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// schemaOf returns the JSON Schema of values of type t as a plain JSON
// value. The schema is self-contained, since MCP clients expect no
// references. It is what huma's schema registry makes from the same
// struct tags (TestSchemaOfAsHuma checks that they agree):
//   - a struct is an object of its exported fields (those of embedded
//     structs included) named by their json tags, with no other member
//     (but for a struct whose "_" field is tagged additionalProperties:"true":
//     any, which the schema then says nothing about), its "properties" and
//     "required" always present;
//   - a field is required unless its json tag has omitempty or omitzero,
//     or its required tag says otherwise;
//   - the field tags doc, enum, minimum, maximum, minItems, maxItems,
//     minLength, maxLength and pattern become the schema's description,
//     enum, and so on (enum, minimum, maximum, minLength, maxLength and
//     pattern apply to an array's items);
//   - pointers are their targets; no type is nullable.
//
// It panics on a type no JSON Schema describes (a func, a channel), or a
// malformed tag: the tools' types are fixed at build time, and the
// registry's test derives every one.
func schemaOf(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0.0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		s := map[string]any{"type": "array", "items": schemaOf(t.Elem())}
		if t.Kind() == reflect.Array {
			s["minItems"], s["maxItems"] = t.Len(), t.Len()
		}
		return s
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case reflect.Struct:
		return structSchema(t)
	case reflect.Interface:
		return map[string]any{}
	}
	panic(fmt.Sprintf("tool: no JSON Schema of %v", t))
}

// structSchema is schemaOf of struct type t.
func structSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	seen := map[string]bool{}
	for _, f := range fields(t, map[reflect.Type]bool{}) {
		if seen[f.Name] {
			continue // overridden by an outer struct's field
		}
		seen[f.Name] = true
		name := f.Name
		req := true
		if j := f.Tag.Get("json"); j != "" {
			n, opts, _ := strings.Cut(j, ",")
			if n != "" {
				name = n
			}
			if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
				req = false
			}
		}
		if name == "-" {
			continue
		}
		if v, ok := f.Tag.Lookup("required"); ok {
			req = v == "true"
		}
		props[name] = fieldSchema(f)
		if req {
			required = append(required, name)
		}
	}
	s := map[string]any{"type": "object", "additionalProperties": false, "properties": props, "required": required}
	if f, ok := t.FieldByName("_"); ok && f.Tag.Get("additionalProperties") == "true" {
		// Other members are allowed, as when the schema says nothing.
		delete(s, "additionalProperties")
	}
	return s
}

// fields are the exported fields of struct type t, then those of its
// embedded structs, as encoding/json flattens them.
func fields(t reflect.Type, visited map[reflect.Type]bool) []reflect.StructField {
	if visited[t] {
		return nil
	}
	visited[t] = true
	var out, embedded []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case !f.IsExported():
		case f.Anonymous && f.Tag.Get("json") == "":
			embedded = append(embedded, f)
		default:
			out = append(out, f)
		}
	}
	for _, f := range embedded {
		et := f.Type
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() == reflect.Struct {
			out = append(out, fields(et, visited)...)
		}
	}
	return out
}

// fieldSchema is the schema of struct field f, with what its tags add.
func fieldSchema(f reflect.StructField) map[string]any {
	s := schemaOf(f.Type)
	// target is what the tags about values constrain: an array's items.
	target := s
	if items, ok := s["items"].(map[string]any); ok && s["type"] == "array" {
		target = items
	}
	if doc, ok := f.Tag.Lookup("doc"); ok {
		s["description"] = doc
	}
	if enum := f.Tag.Get("enum"); enum != "" {
		var values []any
		for _, v := range strings.Split(enum, ",") {
			values = append(values, tagValue(f, target, v))
		}
		target["enum"] = values
	}
	for _, tag := range []string{"minimum", "maximum"} {
		if v, ok := f.Tag.Lookup(tag); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				panic(fmt.Sprintf("tool: field %s: tag %s: %v", f.Name, tag, err))
			}
			target[tag] = n
		}
	}
	for _, tag := range []string{"minLength", "maxLength", "minItems", "maxItems"} {
		if v, ok := f.Tag.Lookup(tag); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				panic(fmt.Sprintf("tool: field %s: tag %s: %v", f.Name, tag, err))
			}
			if strings.HasSuffix(tag, "Items") {
				s[tag] = n
			} else {
				target[tag] = n
			}
		}
	}
	if v := f.Tag.Get("pattern"); v != "" {
		target["pattern"] = v
	}
	return s
}

// tagValue is the value v of a tag of field f, whose schema is s: a
// string as it is, anything else as JSON.
func tagValue(f reflect.StructField, s map[string]any, v string) any {
	if s["type"] == "string" {
		return v
	}
	var out any
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		panic(fmt.Sprintf("tool: field %s: value %q: %v", f.Name, v, err))
	}
	return out
}
