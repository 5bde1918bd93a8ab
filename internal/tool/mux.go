package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
)

// Handler runs one call of a tool. env is what the side that runs the
// tool gives its handlers. args are the call's arguments, which the front
// has validated against the tool's schema.
type Handler[E, R any] func(ctx context.Context, env E, args json.RawMessage) (R, error)

// Mux holds the handlers of tools of one set that one side runs, each
// registered with the tool's definition by the file that implements it
// (see Handle). Their results are Rs.
type Mux[E, R any] struct {
	set      Set
	side     Side
	decode   func(name string, args json.RawMessage, v any) error
	handlers map[string]Handler[E, R]
}

// NewMux returns an empty Mux of the tools of set that side runs. decode
// decodes a call's arguments into v, a pointer to the tool's In, and
// gives the error the side answers when they do not decode.
func NewMux[E, R any](set Set, side Side, decode func(name string, args json.RawMessage, v any) error) *Mux[E, R] {
	return &Mux[E, R]{set: set, side: side, decode: decode, handlers: map[string]Handler[E, R]{}}
}

// Handle registers fn as the handler of the tool d in m. The arguments
// of a tool whose In is NoArgs are not decoded. It panics if d is not of
// m's set and side, or already has a handler in m: both are mistakes of
// the program, which its tests catch.
func Handle[In, Out, E, R any](m *Mux[E, R], d *Def[In, Out], fn func(ctx context.Context, env E, args In) (R, error)) {
	if d.Set != m.set || d.Side != m.side {
		panic(fmt.Sprintf("tool: handler of %s registered on the wrong side", d.Name))
	}
	if _, dup := m.handlers[d.Name]; dup {
		panic(fmt.Sprintf("tool: two handlers of %s", d.Name))
	}
	if reflect.TypeFor[In]() == reflect.TypeFor[NoArgs]() {
		m.handlers[d.Name] = func(ctx context.Context, env E, _ json.RawMessage) (R, error) {
			var args In
			return fn(ctx, env, args)
		}
		return
	}
	m.handlers[d.Name] = func(ctx context.Context, env E, raw json.RawMessage) (R, error) {
		var args In
		if err := m.decode(d.Name, raw, &args); err != nil {
			var zero R
			return zero, err
		}
		return fn(ctx, env, args)
	}
}

// Lookup returns the handler of the tool named name.
func (m *Mux[E, R]) Lookup(name string) (Handler[E, R], bool) {
	h, ok := m.handlers[name]
	return h, ok
}

// Names returns the names of the tools that have a handler in m, in the
// order of their set's tools/list.
func (m *Mux[E, R]) Names() []string {
	var out []string
	for _, name := range Names(m.set, On(m.side)) {
		if _, ok := m.handlers[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// Missing returns the names of the tools of m's set and side that have no
// handler in m, for a test of the side that has one Mux only.
func (m *Mux[E, R]) Missing() []string {
	var out []string
	for _, name := range Names(m.set, On(m.side)) {
		if _, ok := m.handlers[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}
