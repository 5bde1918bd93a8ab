package tool

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
)

// Set is a group of tools that one kind of endpoint lists together.
type Set int

const (
	// SandboxSet are the tools of a sandbox: those of boxsh --rpc and
	// --listen, and of each sandbox of a server of many sandboxes.
	SandboxSet Set = iota
	// ManageSet are the management tools of a server of many sandboxes,
	// at its management endpoint.
	ManageSet
)

// Side is the process that runs a tool.
type Side int

const (
	// Init tools run in boxsh-init, inside the sandbox.
	Init Side = iota
	// Front tools run in the front, outside the sandbox.
	Front
)

// AuditRule says what the audit log records of a tool's calls.
type AuditRule struct {
	// ExitCode tells that the tool's result starts with the exit code of
	// a command (see EncodeStructured): the entry records it, and whether
	// the command timed out.
	ExitCode bool
	// Target names the member of a management tool's arguments that
	// names the sandbox it acts on. A management tool without one is not
	// recorded; every tool of SandboxSet is.
	Target string
}

// Info is what a tool's definition says besides its Go types.
type Info struct {
	Name        string
	Description string
	Annotations Annotations
	// Set is the group the tool is listed in, and Order its place there:
	// tools/list shows a set's tools by increasing Order.
	Set   Set
	Order int
	// Side runs the tool.
	Side Side
	// BeyondV3 marks the tools boxsh v3 does not have, which the list of
	// v3's protocol version leaves out (see Registry.Specs).
	BeyondV3 bool
	// OneOf are members of which exactly one is required; V3Required is
	// what the v3 list shows as required instead.
	OneOf, V3Required []string
	// Audit is what the audit log records of the calls.
	Audit AuditRule
	// Command marks the tool that runs a command on boxsh-init's worker
	// pool (bash). For its calls, a server:
	//   - waits for them at the end of input;
	//   - reports the command's output as their progress;
	//   - may answer them with a task;
	//   - cancels them without a cause.
	Command bool
	// Quick marks the tool whose small calls boxsh-init may answer on its
	// frame reader, before any other call is read (read).
	Quick bool
	// Refusals is what the tool's results say of the network refusals made
	// for its sandbox (none, when zero).
	Refusals RefusalRule
}

// A RefusalRule says which network refusals a tool's results carry.
//
// Refusals are reported:
//   - by a call that neither reads nor starts anything: those made while it ran;
//   - by a call that Reads a process or terminal: those made since that
//     process's or terminal's last read;
//   - by a call that Starts one (its result names it by id): those made while it
//     ran, and the next read of it goes on from there.
type RefusalRule struct {
	Report bool
	// Reads and Starts name a kind of thing known by id ("process",
	// "terminal").
	Reads, Starts string
	// StartsIf, when set, is the boolean argument without which the call
	// starts nothing (bash's background).
	StartsIf string
	// Ends tells that the call ends the thing it reads.
	Ends bool
}

// NoOutput is the Out of a tool whose result has no schema: tools/list
// shows no outputSchema.
type NoOutput struct{}

// Def is the definition of one tool: its Info, the type In of its
// arguments and the type Out of its structured result, from which its
// schemas are derived.
type Def[In, Out any] struct {
	Info
	entry *entry
}

// entry is a defined tool, whatever its types.
type entry struct {
	*Info
	// in and out are the types of the arguments and structured result
	// (nil: none).
	in, out reflect.Type
	// schemas derives the tool's schemas at their first use.
	schemas func() derived
	// run, when set, makes the handler defined with the tool (see
	// Def.Runs), with the decoder of the Mux it goes in.
	run func(decode func(string, json.RawMessage, any) error) Handler[Env, Result]
}

// derived are a tool's schemas, derived from its Go types.
type derived struct {
	inputJSON, outputJSON json.RawMessage
	// input decodes inputJSON, at its first use.
	input func() map[string]any
	err   error
}

// defined holds every tool defined, in the order of definition.
var defined []*entry

// Define defines a tool and returns its definition. The tool's arguments
// are an In, and its structured result is an Out (NoOutput for none). The
// side that runs the tool registers its handler with the definition (see
// Handle), or the definition carries it (see Def.Runs).
// It is meant for the initialisation of this package's variables, one for
// each tool, in the tool's own file: both sides, and every list of tools,
// see every definition.
func Define[In, Out any](info Info) *Def[In, Out] {
	d := &Def[In, Out]{Info: info}
	in, out := reflect.TypeFor[In](), reflect.TypeFor[Out]()
	if out == reflect.TypeFor[NoOutput]() {
		out = nil
	}
	d.entry = &entry{Info: &d.Info, in: in, out: out, schemas: sync.OnceValue(func() derived {
		return derive(in, out)
	})}
	defined = append(defined, d.entry)
	return d
}

// derive derives the schemas of a tool of arguments in and structured
// result out (nil: none).
func derive(in, out reflect.Type) derived {
	var d derived
	input := schemaOf(in)
	if input["type"] != "object" {
		d.err = fmt.Errorf("the arguments %v are not an object", in)
		return d
	}
	if d.inputJSON, d.err = json.Marshal(input); d.err != nil {
		return d
	}
	// Validate reads the schema as encoding/json decodes it (numbers
	// float64, arrays []any), which most tools of a session never need.
	d.input = sync.OnceValue(func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal(d.inputJSON, &m); err != nil {
			// What encoding/json encoded decodes.
			panic(fmt.Sprintf("tool: decode the input schema of %v: %v", in, err))
		}
		return m
	})
	if out != nil {
		d.outputJSON, d.err = json.Marshal(schemaOf(out))
	}
	return d
}

// entries are the tools of set, in the order of its tools/list.
func entries(set Set) []*entry {
	var es []*entry
	for _, e := range defined {
		if e.Set == set {
			es = append(es, e)
		}
	}
	slices.SortStableFunc(es, func(a, b *entry) int { return cmp.Compare(a.Order, b.Order) })
	return es
}

// Infos returns the definitions of the tools of set that keep selects
// (nil: all of them), in the order of the set's tools/list.
func Infos(set Set, keep func(*Info) bool) []*Info {
	var out []*Info
	for _, e := range entries(set) {
		if keep == nil || keep(e.Info) {
			out = append(out, e.Info)
		}
	}
	return out
}

// Names returns the names of the tools of set that keep selects (nil: all
// of them), in the order of the set's tools/list.
func Names(set Set, keep func(*Info) bool) []string {
	var out []string
	for _, in := range Infos(set, keep) {
		out = append(out, in.Name)
	}
	return out
}

// Lookup returns the definition of the tool of set named name.
func Lookup(set Set, name string) (*Info, bool) {
	in, ok := byName()[setName{set, name}]
	return in, ok
}

// setName names a tool of a set.
type setName struct {
	set  Set
	name string
}

// byName indexes the tools by set and name, once all are defined (by the
// initialisation of the package's variables, before any use).
var byName = sync.OnceValue(func() map[setName]*Info {
	m := make(map[setName]*Info, len(defined))
	for _, e := range defined {
		m[setName{e.Set, e.Name}] = e.Info
	}
	return m
})

// InV3 selects the tools that the list of boxsh v3's protocol version
// shows (see Names).
func InV3(in *Info) bool { return !in.BeyondV3 }

// On returns a selection of the tools that side runs (see Names).
func On(side Side) func(*Info) bool {
	return func(in *Info) bool { return in.Side == side }
}

// IsCommand reports whether the tool of the sandbox named name runs a
// command on boxsh-init's worker pool (Info.Command).
func IsCommand(name string) bool {
	in, ok := Lookup(SandboxSet, name)
	return ok && in.Command
}

// IsQuick reports whether the tool of the sandbox named name may be
// answered on boxsh-init's frame reader (Info.Quick).
func IsQuick(name string) bool {
	in, ok := Lookup(SandboxSet, name)
	return ok && in.Quick
}
