package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/boxsh/boxsh/internal/largecall"
	"github.com/boxsh/boxsh/internal/tool"
)

// The modern MCP revisions (2026-07-28 on) have no initialize handshake:
// every request names its protocol version and the client's capabilities in
// params._meta, and the server answers each request on its own. A request
// whose _meta carries no protocol version is served by the legacy rules
// (initialize, v3's leniencies), so one server speaks both eras on the same
// stream (the "dual-era" server of the 2026-07-28 versioning page).

// ModernVersions are the MCP revisions of the stateless era the server
// speaks, newest first. A request of that era carries its version in each
// request's _meta instead of an initialize handshake.
var ModernVersions = []string{"2026-07-28"}

// Error codes of MCP 2026-07-28, from the specification's "Error Codes"
// section (basic/index).
const (
	CodeHeaderMismatch                  = -32020
	CodeMissingRequiredClientCapability = -32021
	CodeUnsupportedProtocolVersion      = -32022
)

// The _meta keys of MCP 2026-07-28.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// listTTL is the ttlMs of the cacheable results (tools/list,
// server/discover): the tools of a server never change while it runs, but
// an upgrade restarts it, so clients re-check after a few minutes.
const listTTL = 300000

// supportedVersions lists every version the server speaks, modern ones
// first, newest first: the supported list of server/discover and of the
// unsupported-version error.
func supportedVersions() []string {
	v := slices.Clone(ModernVersions)
	for i := len(ProtocolVersions) - 1; i >= 0; i-- {
		v = append(v, ProtocolVersions[i])
	}
	return v
}

var protocolVersionKey = []byte(`"` + metaProtocolVersion + `"`)

// modernMeta is what a modern request's _meta says.
type modernMeta struct {
	version string
	client  string
	// tasks tells that the client takes task handles (the Tasks
	// extension in its capabilities).
	tasks bool
}

// requestEra reads the per-request protocol fields of params. It returns
// ok=false for a legacy request: one whose params._meta names no protocol
// version, or names a legacy (initialize-era) version, as the official Go
// SDK server does. A modern request whose fields are malformed or whose
// version the server does not speak gets the error to answer with.
func requestEra(params json.RawMessage) (m modernMeta, ok bool, rpcErr *Error) {
	// Only _meta matters: of large params (a write of a big file), only
	// it is scanned and decoded.
	params = largecall.OnlyMembers(params, "_meta")
	// Legacy clients never send the key: one scan keeps their requests
	// off any extra decoding.
	if !bytes.Contains(params, protocolVersionKey) {
		return m, false, nil
	}
	// The three keys as fields, not a map of every key: a third of the
	// allocations, on every modern request.
	var p struct {
		Meta struct {
			Version json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
			Caps    json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
			Info    json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return m, false, nil // not an object: the method reports it
	}
	raw := p.Meta.Version
	if raw == nil {
		return m, false, nil // the key was elsewhere, e.g. in arguments
	}
	// Into a local: decoding into m.version would move m to the heap on
	// every call, legacy ones included.
	var version string
	err := json.Unmarshal(raw, &version)
	m.version = version
	if err != nil {
		return m, true, &Error{Code: CodeInvalidParams, Message: "_meta." + metaProtocolVersion + " must be a string"}
	}
	if slices.Contains(ProtocolVersions, m.version) {
		return m, false, nil
	}
	if !slices.Contains(ModernVersions, m.version) {
		data, _ := json.Marshal(map[string]any{"supported": supportedVersions(), "requested": m.version})
		return m, true, &Error{Code: CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version", Data: data}
	}
	caps := p.Meta.Caps
	if len(caps) == 0 || caps[0] != '{' {
		return m, true, &Error{Code: CodeInvalidParams, Message: "missing or invalid _meta field " + metaClientCapabilities + " (an object)"}
	}
	if bytes.Contains(caps, []byte(extTasks)) {
		var c struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		}
		_ = json.Unmarshal(caps, &c)
		_, m.tasks = c.Extensions[extTasks]
	}
	if info := p.Meta.Info; info != nil {
		var ci struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		}
		if err := json.Unmarshal(info, &ci); err != nil {
			return m, true, &Error{Code: CodeInvalidParams, Message: "invalid _meta field " + metaClientInfo + ": " + err.Error()}
		}
		m.client = ci.Name + " " + ci.Version
	}
	return m, true, nil
}

// modernResults holds the encoded parts of modern results.
type modernResults struct {
	// meta is the _meta of every modern result: the server's identity.
	meta []byte
	// discover is the whole server/discover result.
	discover []byte
}

func newModernResults(s *Server) (*modernResults, error) {
	serverInfo := map[string]string{"name": s.Name, "version": s.Version}
	meta, err := json.Marshal(map[string]any{metaServerInfo: serverInfo})
	if err != nil {
		return nil, err
	}
	r := &modernResults{meta: meta}
	r.discover, err = json.Marshal(map[string]any{
		"resultType": "complete", "_meta": json.RawMessage(meta),
		"supportedVersions": supportedVersions(),
		"capabilities": map[string]any{"tools": map[string]any{},
			"extensions": map[string]any{extTasks: map[string]any{}}},
		"ttlMs": listTTL, "cacheScope": "private",
	})
	return r, err
}

// encodeToolsList encodes the whole tools/list result of specs.
func (r *modernResults) encodeToolsList(specs []*tool.Spec) ([]byte, error) {
	return json.Marshal(map[string]any{
		"resultType": "complete", "_meta": json.RawMessage(r.meta),
		"tools": specs, "ttlMs": listTTL, "cacheScope": "private",
	})
}

// wrapAs splices resultType rt and the server's _meta into an object the
// server encoded itself (so without either member).
func (r *modernResults) wrapAs(rt string, obj []byte) []byte {
	return wrapWith(rt, r.meta, obj)
}

// wrapWith splices resultType rt and _meta meta into obj, an object
// without either member.
func wrapWith(rt string, meta, obj []byte) []byte {
	out := make([]byte, 0, len(obj)+len(meta)+len(rt)+32)
	out = append(out, `{"resultType":"`...)
	out = append(out, rt...)
	out = append(out, `","_meta":`...)
	out = append(out, meta...)
	if inner := bytes.TrimSpace(obj[1 : len(obj)-1]); len(inner) > 0 {
		out = append(out, ',')
		out = append(out, inner...)
	}
	return append(out, '}')
}

// metaWith returns the server's _meta with the members of extra, an
// object whose keys are not the server's, added: one _meta, never two.
func (r *modernResults) metaWith(extra []byte) []byte {
	extra = bytes.TrimSpace(extra)
	if len(extra) <= 2 {
		return r.meta
	}
	out := make([]byte, 0, len(r.meta)+len(extra))
	out = append(out, r.meta[:len(r.meta)-1]...)
	out = append(out, ',')
	return append(out, extra[1:]...)
}

// wrap turns an encoded result object into a modern one, adding resultType
// and _meta; a _meta of its own gets the server's members it lacks.
func (r *modernResults) wrap(result []byte) []byte {
	body := bytes.TrimSpace(result)
	if len(body) < 2 || body[0] != '{' {
		return result
	}
	if bytes.Contains(body, []byte(`"_meta"`)) || bytes.Contains(body, []byte(`"resultType"`)) {
		// Rare: decode to merge rather than emit a duplicate member.
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			return result
		}
		if _, ok := m["resultType"]; !ok {
			m["resultType"] = json.RawMessage(`"complete"`)
		}
		m["_meta"] = r.mergeMeta(m["_meta"])
		b, _ := json.Marshal(m)
		return b
	}
	return r.wrapAs("complete", body)
}

// mergeMeta returns own, a result's _meta (or nil), with the server's
// members it lacks; own is kept as it is when it is not an object.
func (r *modernResults) mergeMeta(own json.RawMessage) json.RawMessage {
	if own == nil {
		return r.meta
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(own, &m) != nil || m == nil {
		return own
	}
	var server map[string]json.RawMessage
	_ = json.Unmarshal(r.meta, &server)
	for k, v := range server {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// handleModern answers a request of the modern era. The message has been
// checked to be a request with a valid id and a string method.
func (ss *peer) handleModern(ctx context.Context, req *request, id json.RawMessage, method string, meta modernMeta) {
	switch method {
	case "server/discover":
		ss.writeResult(id, ss.modern.discover)
	case "tools/list":
		ss.writeToolsList(id, func(l *toolLists) []byte { return l.modern })
	case "tools/call":
		if meta.tasks {
			ss.toolsCallTask(ctx, id, req.Params)
			return
		}
		ss.toolsCall(ctx, id, req.Params, true)
	case "tasks/get", "tasks/update", "tasks/cancel":
		ss.taskMethod(id, method, req.Params)
	case "subscriptions/listen":
		ss.listen(ctx, id, req.Params, meta)
	case "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		// Removed by 2026-07-28 (SEP-2575).
		ss.writeError(id, CodeMethodNotFound, strconv.Quote(method)+" is not part of protocol version "+meta.version)
	default:
		ss.writeError(id, CodeMethodNotFound, "unknown method: "+method)
	}
}
