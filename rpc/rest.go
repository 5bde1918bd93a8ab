package rpc

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/tool"
)

// The REST twin of the MCP tools: POST /v1/tools/NAME with the tool's
// arguments as the body answers the tool's CallToolResult, and
// GET /openapi.json describes every tool of the registry (OpenAPI 3.1),
// with the JSON Schemas tools/list shows (derived from the same Go
// types). The arguments go through the same validation as tools/call, so
// a bad call gets the same message; the HTTP transport puts the same
// Origin and token checks in front.
//
// The OpenAPI document has two parts:
//   - openapi.json, which huma generates (go test ./rpc -run
//     TestOpenAPIGenerated -update), holds what no tool definition says:
//     the management API of a server of many sandboxes;
//   - the operations of the tools are made at run time from their
//     definitions, as huma would describe them (TestOpenAPIToolsAsHuma).
//
// So a new tool changes no generated file. And huma's package
// initialisation, which would be paid at every start of the front and
// again by libcontainer's init, stays out of the binary.

//go:generate go test . -run TestOpenAPIGenerated -update

//go:embed openapi.json
var openAPIJSON []byte

// openAPIVersion stands for the server's version in openapi.json.
const openAPIVersion = "VERSION"

// RESTHandler returns the REST twin of s's tools: POST /v1/tools/NAME
// calls tool NAME with the JSON body as its arguments, and GET
// /openapi.json describes the tools.
func RESTHandler(s *Server) (http.Handler, error) {
	if err := s.prepare(); err != nil {
		return nil, err
	}
	doc, err := openAPIDocument(s.Version, false)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", serveDocument(doc))
	mux.HandleFunc("POST /v1/tools/{name}", s.toolHandler)
	return mux, nil
}

// serveDocument answers with the OpenAPI document doc.
func serveDocument(doc []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/openapi+json")
		_, _ = w.Write(doc)
	}
}

// toolHandler answers POST /v1/tools/{name}.
func (s *Server) toolHandler(w http.ResponseWriter, r *http.Request) {
	s.serveTool(w, r, r.PathValue("name"))
}

// openAPIDocument returns the OpenAPI document of one kind of server, with
// the server's version. It describes:
//   - a single sandbox's REST twin (/v1/tools/NAME);
//   - with many, a server of many sandboxes: its management API and the
//     sandboxes' twins (/s/{sandbox}/v1/tools/{tool}).
func openAPIDocument(version string, many bool) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIJSON, &doc); err != nil {
		return nil, fmt.Errorf("REST twin: openapi.json: %w", err)
	}
	if info, ok := doc["info"].(map[string]any); ok {
		info["version"] = version
		if many {
			info["description"] = "A server of many boxsh sandboxes: the management API (the server's token), " +
				"and each sandbox's REST twin of its MCP tools at /s/{sandbox}/v1/tools/{tool} (its token or the server's)."
		}
	}
	paths, _ := doc["paths"].(map[string]any)
	if many {
		if op, ok := paths[ManagePath].(map[string]any)["post"].(map[string]any); ok {
			op["description"] = manageMCPDescription()
		}
	} else {
		for p := range paths {
			delete(paths, p)
		}
		tools, err := tool.NewRegistry()
		if err != nil {
			return nil, fmt.Errorf("REST twin: %w", err)
		}
		for _, spec := range tools.AllSpecs() {
			op, err := toolOperation(spec)
			if err != nil {
				return nil, fmt.Errorf("REST twin: %w", err)
			}
			paths["/v1/tools/"+spec.Name] = map[string]any{"post": op}
		}
	}
	pruneSchemas(doc)
	return json.Marshal(doc)
}

// manageMCPDescription describes the management MCP endpoint, naming its
// tools.
func manageMCPDescription() string {
	names := tool.Names(tool.ManageSet, nil)
	list := strings.Join(names, ", ")
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	return "A streamable-HTTP MCP endpoint (both protocol eras) whose tools are " + list + ". Takes the server's token only."
}

// toolOperation describes POST /v1/tools/NAME of spec's tool as huma
// describes an operation whose bodies have spec's schemas.
func toolOperation(spec *tool.Spec) (map[string]any, error) {
	in, err := humaForm(spec.InputSchema())
	if err != nil {
		return nil, fmt.Errorf("%s input schema: %w", spec.Name, err)
	}
	result := map[string]any{
		"type":     "object",
		"required": []any{"content"},
		"properties": map[string]any{
			"content": map[string]any{"type": "array", "description": "MCP content blocks (text or image)",
				"items": map[string]any{"type": "object", "additionalProperties": true}},
			"isError": map[string]any{"type": "boolean", "description": "Set when the tool ran and failed"},
		},
	}
	if out := spec.OutputSchema(); len(out) > 0 {
		o, err := humaForm(out)
		if err != nil {
			return nil, fmt.Errorf("%s output schema: %w", spec.Name, err)
		}
		result["properties"].(map[string]any)["structuredContent"] = o
	}
	problem := func(description string) map[string]any {
		return map[string]any{"description": description, "content": map[string]any{
			"application/problem+json": map[string]any{"schema": map[string]any{"type": "object", "additionalProperties": true}}}}
	}
	return map[string]any{
		"operationId": "tool-" + spec.Name,
		"summary":     spec.Annotations.Title,
		"description": spec.Description,
		"tags":        []any{"tools"},
		"requestBody": map[string]any{
			"description": "The tool's arguments",
			"content":     map[string]any{"application/json": map[string]any{"schema": in}},
		},
		"responses": map[string]any{
			"200": map[string]any{"description": "The MCP CallToolResult",
				"content": map[string]any{"application/json": map[string]any{"schema": result}}},
			"400": problem("Invalid arguments (the message tools/call gives as -32602)"),
			"401": problem("A missing or wrong bearer token"),
		},
	}, nil
}

// humaForm decodes a JSON Schema as huma writes it back: without empty
// "properties" or "required".
func humaForm(schema json.RawMessage) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, err
	}
	var drop func(v any)
	drop = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range []string{"properties", "required"} {
				switch e := v[k].(type) {
				case map[string]any:
					if len(e) == 0 {
						delete(v, k)
					}
				case []any:
					if len(e) == 0 {
						delete(v, k)
					}
				}
			}
			for _, e := range v {
				drop(e)
			}
		case []any:
			for _, e := range v {
				drop(e)
			}
		}
	}
	drop(m)
	return m, nil
}

// pruneSchemas removes the component schemas that nothing of doc refers
// to (directly, or through the schemas it keeps).
func pruneSchemas(doc map[string]any) {
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	const prefix = "#/components/schemas/"
	used := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && strings.HasPrefix(ref, prefix) {
				name := strings.TrimPrefix(ref, prefix)
				if !used[name] {
					used[name] = true
					walk(schemas[name])
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for k, v := range doc {
		if k != "components" {
			walk(v)
		}
	}
	for name := range schemas {
		if !used[name] {
			delete(schemas, name)
		}
	}
}

// serveTool answers POST /v1/tools/NAME with the CallToolResult, or with a
// problem (RFC 9457):
//   - 404 for an unknown tool;
//   - 400 for invalid arguments, with the message tools/call gives as
//     -32602;
//   - 500 for a failure of boxsh.
func (s *Server) serveTool(w http.ResponseWriter, r *http.Request, name string) {
	if _, ok := s.Tools.Lookup(name); !ok {
		writeProblem(w, http.StatusNotFound, "no tool "+name)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "read the request body: "+err.Error())
		return
	}
	res, err := s.CallTool(withClient(r.Context(), restClient(r)), name, body)
	var rpcErr *Error
	switch {
	case errors.As(err, &rpcErr) && rpcErr.Code == CodeInvalidParams:
		writeProblem(w, http.StatusBadRequest, rpcErr.Message)
		return
	case err != nil:
		writeProblem(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(res)
}

// writeProblem writes an RFC 9457 problem document.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	b, _ := json.Marshal(apitype.Problem{Title: http.StatusText(status), Status: status, Detail: detail})
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// CallTool validates and runs one tool call as tools/call does, and waits
// for its CallToolResult. A protocol fault is an *Error. A tool that runs
// and fails gives a result with isError set.
func (s *Server) CallTool(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	args, bad := s.checkCall(name, args, false)
	if bad != nil {
		return nil, bad
	}
	type reply struct {
		res json.RawMessage
		err error
	}
	done := make(chan reply, 1)
	if err := s.Backend.Start(ctx, name, args, func(res json.RawMessage, err error) { done <- reply{res, err} }); err != nil {
		return nil, err
	}
	r := <-done
	var rpcErr *Error
	switch {
	case errors.As(r.err, &rpcErr):
		return nil, rpcErr
	case r.err != nil:
		s.Log.Error("tool call failed", "tool", name, "error", r.err)
		return json.Marshal(tool.Errorf("%s: %v", name, r.err))
	}
	return r.res, nil
}
