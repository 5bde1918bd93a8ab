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
	m.add(d.Name, bind(d.Name, m.decode, fn))
}

// add registers h as the handler of the tool named name.
func (m *Mux[E, R]) add(name string, h Handler[E, R]) {
	if _, dup := m.handlers[name]; dup {
		panic(fmt.Sprintf("tool: two handlers of %s", name))
	}
	m.handlers[name] = h
}

// bind returns the Handler that decodes a call's arguments into an In
// (none for NoArgs) and runs fn with them.
func bind[In, E, R any](name string, decode func(string, json.RawMessage, any) error, fn func(context.Context, E, In) (R, error)) Handler[E, R] {
	if reflect.TypeFor[In]() == reflect.TypeFor[NoArgs]() {
		return func(ctx context.Context, env E, _ json.RawMessage) (R, error) {
			var args In
			return fn(ctx, env, args)
		}
	}
	return func(ctx context.Context, env E, raw json.RawMessage) (R, error) {
		var args In
		if err := decode(name, raw, &args); err != nil {
			var zero R
			return zero, err
		}
		return fn(ctx, env, args)
	}
}

// Env is what boxsh-init gives the handlers defined with their tools
// (see Def.Runs).
type Env interface {
	// DeniedBy names the sandbox's rule that refuses reading the object
	// at the absolute path, or is "" when no rule does.
	DeniedBy(path string) string
}

// Runs makes fn the handler of d, a tool of boxsh-init whose work needs
// only what Env gives, and returns d. boxsh-init registers such handlers
// with HandleDefined. A tool so defined is one file: its definition, its
// types and its handler. It panics if d is not a tool of boxsh-init.
func (d *Def[In, Out]) Runs(fn func(ctx context.Context, env Env, args In) (Result, error)) *Def[In, Out] {
	if d.Side != Init {
		panic(fmt.Sprintf("tool: %s runs in the front: register its handler there (Handle)", d.Name))
	}
	d.entry.run = func(decode func(string, json.RawMessage, any) error) Handler[Env, Result] {
		return bind(d.Name, decode, fn)
	}
	return d
}

// HandleDefined registers in m the handlers defined with their tools (see
// Def.Runs), for each tool of m's set and side that has one.
func HandleDefined[E Env](m *Mux[E, Result]) {
	for _, e := range entries(m.set) {
		if e.Side != m.side || e.run == nil {
			continue
		}
		h := e.run(m.decode)
		m.add(e.Name, func(ctx context.Context, env E, raw json.RawMessage) (Result, error) {
			return h(ctx, env, raw)
		})
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
