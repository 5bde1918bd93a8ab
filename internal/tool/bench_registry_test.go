package tool

import (
	"encoding/json"
	"sync"
	"testing"
)

// forgetSchemas makes every tool's schemas derived again at their next
// use, as in a new process.
func forgetSchemas() {
	for _, e := range defined {
		in, out := e.in, e.out
		e.schemas = sync.OnceValue(func() derived { return derive(in, out) })
	}
}

// BenchmarkFirstToolsList measures what a front pays before its first
// tools/list answer: the registry made, every tool's schemas derived, the
// full list encoded.
func BenchmarkFirstToolsList(b *testing.B) {
	defer forgetSchemas()
	for b.Loop() {
		forgetSchemas()
		r, err := NewRegistry()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(map[string]any{"tools": r.AllSpecs()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstBashValidate measures what a front pays before it can
// validate its first bash call: the registry made, bash's schemas
// derived.
func BenchmarkFirstBashValidate(b *testing.B) {
	defer forgetSchemas()
	args := json.RawMessage(`{"command":"true"}`)
	for b.Loop() {
		forgetSchemas()
		r, err := NewRegistry()
		if err != nil {
			b.Fatal(err)
		}
		s, _ := r.Lookup(Bash)
		if err := s.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}
