package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/internal/tool"
)

// maxCursors bounds the background processes and terminals whose last
// read refusals keeps; beyond it the oldest is forgotten.
const maxCursors = 64

// refusals are the network refusals of a sandbox, as its tool results
// report them.
//
// A call reports the refusals recorded since it started. A read of a
// background process or of a terminal reports those since the previous read
// of it (or since it started): a cursor per process and terminal remembers
// where the previous one ended. The record is the sandbox's, so concurrent
// calls may each report the refusals of the other.
type refusals struct {
	rec *proxy.Refusals

	mu      sync.Mutex
	cursors map[string]uint64
}

func newRefusals() *refusals {
	return &refusals{rec: proxy.NewRefusals(0), cursors: make(map[string]uint64)}
}

// decided records d, then tells next (if set).
func (r *refusals) decided(next func(proxy.Decision)) func(proxy.Decision) {
	return func(d proxy.Decision) {
		r.rec.Record(d)
		if next != nil {
			next(d)
		}
	}
}

// cursor returns where the previous report of key ended, or since.
func (r *refusals) cursor(key string, since uint64) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if seq, ok := r.cursors[key]; ok {
		return min(seq, since)
	}
	return since
}

// forget forgets the cursor of key.
func (r *refusals) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.cursors, key)
}

// setCursor remembers that a report of key ended at seq.
func (r *refusals) setCursor(key string, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.cursors[key]; !ok && len(r.cursors) >= maxCursors {
		oldest, least := "", uint64(0)
		for k, s := range r.cursors {
			if oldest == "" || s < least {
				oldest, least = k, s
			}
		}
		delete(r.cursors, oldest)
	}
	r.cursors[key] = seq
}

// stats are the latest refusals, for sandbox_stats.
func (r *refusals) stats() []tool.NetworkRefusal {
	recent := r.rec.Recent(tool.MaxStatsRefusals)
	if len(recent) == 0 {
		return nil
	}
	out := make([]tool.NetworkRefusal, len(recent))
	for i, e := range recent {
		out[i] = tool.NetworkRefusal{Host: e.Host, Port: e.Port, Reason: e.Reason, Allow: e.Allow, Count: e.Count}
	}
	return out
}

// wrap returns done with the refusals that tool name reports added to
// its result (its definition's RefusalRule); for a tool that reports
// none, done itself.
func (r *refusals) wrap(name string, args json.RawMessage, done func(json.RawMessage, error)) func(json.RawMessage, error) {
	info, ok := tool.Lookup(tool.SandboxSet, name)
	if !ok || !info.Refusals.Report {
		return done
	}
	rule := info.Refusals
	var key string // the process or terminal read, if any
	since := r.rec.Seq()
	if rule.Reads != "" {
		key = rule.Reads + " " + idOf(args)
		since = r.cursor(key, since)
	}
	return func(res json.RawMessage, err error) {
		if err != nil {
			done(res, err)
			return
		}
		refs, latest, dropped := r.rec.Since(since)
		switch {
		case rule.Ends:
			r.forget(key)
		case key != "":
			r.setCursor(key, latest)
		case rule.Starts != "" && (rule.StartsIf == "" || argTrue(args, rule.StartsIf)):
			// A process or terminal it started: its reads go on from here.
			// Only then is the result decoded: a command's may be large.
			if id := resultID(res); id != "" {
				r.setCursor(rule.Starts+" "+id, latest)
			}
		}
		if len(refs) > 0 {
			res = withRefusals(res, refs, dropped)
		}
		done(res, nil)
	}
}

// argTrue reports whether the call's arguments set member name to true.
func argTrue(args json.RawMessage, name string) bool {
	if !bytes.Contains(args, []byte(`"`+name+`"`)) {
		return false
	}
	var a map[string]json.RawMessage
	if json.Unmarshal(args, &a) != nil {
		return false
	}
	return string(a[name]) == "true"
}

// idOf is the member id of a call's arguments.
func idOf(args json.RawMessage) string {
	var a struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(args, &a)
	return a.ID
}

// resultID is the member id of a result's structured content, or "".
func resultID(res json.RawMessage) string {
	var r struct {
		StructuredContent struct {
			ID string `json:"id"`
		} `json:"structuredContent"`
	}
	_ = json.Unmarshal(res, &r)
	return r.StructuredContent.ID
}

// withRefusals adds refs (at least one) to the CallToolResult res: the member
// network_refusals to its structured content (an object), also in the text
// block that repeats that content, and a text block of one line that names
// them. dropped tells that the record lost some. A result it cannot read is
// left as it is.
func withRefusals(res json.RawMessage, refs []proxy.Refusal, dropped bool) json.RawMessage {
	var r struct {
		Content           []tool.Content  `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return res
	}
	out := tool.Result{Content: r.Content, IsError: r.IsError}
	sc := bytes.TrimSpace(r.StructuredContent)
	if len(sc) > 0 {
		out.StructuredContent = json.RawMessage(sc)
	}
	if len(sc) >= 2 && sc[0] == '{' && sc[len(sc)-1] == '}' {
		kept := refs[:min(len(refs), tool.MaxCallRefusals)]
		list := make([]tool.NetworkRefusal, len(kept))
		for i, e := range kept {
			list[i] = tool.NetworkRefusal{Host: e.Host, Port: e.Port, Reason: e.Reason, Allow: e.Allow}
		}
		body := bytes.TrimSpace(sc[1 : len(sc)-1])
		grown := append([]byte{'{'}, body...)
		member := tool.AppendRefusals(nil, list)
		if len(body) == 0 {
			member = member[1:] // no member before it: no comma
		}
		grown = append(append(grown, member...), '}')
		out.StructuredContent = json.RawMessage(grown)
		// The text block that repeats the structured content repeats it
		// still.
		if len(out.Content) > 0 && out.Content[0].Type == "text" && out.Content[0].Text == string(r.StructuredContent) {
			out.Content = append([]tool.Content(nil), out.Content...)
			out.Content[0].Text = string(grown)
		}
	}
	out.Content = append(out.Content, tool.Content{Type: "text", Text: refusalLine(refs, dropped)})
	b, err := out.AppendJSON(nil)
	if err != nil {
		return res
	}
	return b
}

// refusalLine is the one line that names refs, at most tool.MaxRefusalLine
// of them, and counts the others.
func refusalLine(refs []proxy.Refusal, dropped bool) string {
	var b strings.Builder
	b.WriteString("[boxsh: network refused: ")
	for i, e := range refs[:min(len(refs), tool.MaxRefusalLine)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(net.JoinHostPort(e.Host, strconv.Itoa(e.Port)))
		b.WriteString(" (" + e.Reason)
		if e.Allow != "" {
			b.WriteString("; allow with " + e.Allow)
		}
		b.WriteString(")")
	}
	more := len(refs) - tool.MaxRefusalLine
	switch {
	case dropped:
		b.WriteString(", and more (see sandbox_stats)")
	case more > 0:
		fmt.Fprintf(&b, ", and %d more (see sandbox_stats)", more)
	}
	b.WriteString("]")
	return b.String()
}
