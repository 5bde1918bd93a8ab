package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/boxsh/boxsh/tool"
)

// The REST twin of the MCP tools: POST /v1/tools/NAME with the tool's
// arguments as the body answers the tool's CallToolResult, and
// GET /openapi.json describes every tool of the registry (OpenAPI 3.1),
// with the JSON Schemas tools/list shows (generated from the same Go
// types). The arguments go through the same validation as tools/call, so
// a bad call gets the same message; the HTTP transport puts the same
// Origin and token checks in front.

// restInput is a tool call's HTTP request: the arguments, undecoded.
type restInput struct {
	RawBody []byte
}

// restOutput is the encoded CallToolResult.
type restOutput struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// RESTHandler returns the REST twin of s's tools.
func RESTHandler(s *Server) (http.Handler, error) {
	if err := s.prepare(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	cfg := huma.DefaultConfig("boxsh", s.Version)
	cfg.CreateHooks = nil // no $schema links in bodies
	cfg.DocsPath = ""     // no docs page pulling scripts from a CDN
	cfg.SchemasPath = ""
	cfg.Info.Description = "REST twin of boxsh's MCP tools: POST the tool's arguments, get its MCP CallToolResult."
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "The token of boxsh --listen (see its token file)."},
	}
	cfg.Security = []map[string][]string{{"bearer": {}}}
	api := humago.New(mux, cfg)
	for _, spec := range s.Tools.AllSpecs() {
		if err := registerTool(api, s, spec); err != nil {
			return nil, err
		}
	}
	return mux, nil
}

// registerTool adds POST /v1/tools/NAME.
func registerTool(api huma.API, s *Server, spec *tool.Spec) error {
	in, err := hSchema(spec.InputSchema)
	if err != nil {
		return fmt.Errorf("REST twin: %s input schema: %w", spec.Name, err)
	}
	result := &huma.Schema{
		Type:     "object",
		Required: []string{"content"},
		Properties: map[string]*huma.Schema{
			"content": {Type: "array", Description: "MCP content blocks (text or image)",
				Items: &huma.Schema{Type: "object", AdditionalProperties: true}},
			"isError": {Type: "boolean", Description: "Set when the tool ran and failed"},
		},
	}
	if len(spec.OutputSchema) > 0 {
		out, err := hSchema(spec.OutputSchema)
		if err != nil {
			return fmt.Errorf("REST twin: %s output schema: %w", spec.Name, err)
		}
		result.Properties["structuredContent"] = out
	}
	op := huma.Operation{
		OperationID: "tool-" + spec.Name,
		Method:      http.MethodPost,
		Path:        "/v1/tools/" + spec.Name,
		Summary:     spec.Annotations.Title,
		Description: spec.Description,
		Tags:        []string{"tools"},
		// tools/call's validation, for the same messages.
		SkipValidateBody: true,
		RequestBody: &huma.RequestBody{
			Description: "The tool's arguments",
			Content:     map[string]*huma.MediaType{"application/json": {Schema: in}},
		},
		Responses: map[string]*huma.Response{
			"200": {Description: "The MCP CallToolResult",
				Content: map[string]*huma.MediaType{"application/json": {Schema: result}}},
			"400": {Description: "Invalid arguments (the message tools/call gives as -32602)",
				Content: map[string]*huma.MediaType{"application/problem+json": {Schema: &huma.Schema{Type: "object", AdditionalProperties: true}}}},
		},
	}
	name := spec.Name
	huma.Register(api, op, func(ctx context.Context, in *restInput) (*restOutput, error) {
		res, err := s.CallTool(ctx, name, in.RawBody)
		var rpcErr *Error
		switch {
		case errors.As(err, &rpcErr) && rpcErr.Code == CodeInvalidParams:
			return nil, huma.Error400BadRequest(rpcErr.Message)
		case err != nil:
			return nil, huma.Error500InternalServerError(err.Error())
		}
		return &restOutput{ContentType: "application/json", Body: res}, nil
	})
	return nil
}

// hSchema decodes a JSON Schema into huma's form.
func hSchema(raw json.RawMessage) (*huma.Schema, error) {
	var sc huma.Schema
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, err
	}
	return &sc, nil
}

// CallTool validates and runs one tool call as tools/call does, waiting
// for its CallToolResult. A protocol fault is an *Error; a tool that runs
// and fails is a result with isError.
func (s *Server) CallTool(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	spec, ok := s.Tools.Lookup(name)
	if !ok {
		return nil, &Error{Code: CodeInvalidParams, Message: "unknown tool: " + name}
	}
	if err := spec.Validate(args); err != nil {
		return nil, &Error{Code: CodeInvalidParams, Message: err.Error()}
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
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
