package rpc

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/tool"
)

var (
	updateOpenAPI = flag.Bool("update", false, "rewrite openapi.json from the tool specs")
	openAPIOut    = flag.String("openapi-out", "", "write the documents each kind of server serves into this directory (scripts/lint-openapi.sh)")
)

// TestOpenAPIGenerated generates with huma the part of the OpenAPI 3.1
// document that no tool definition says, and checks that openapi.json
// holds it (go test ./rpc -run TestOpenAPIGenerated -update rewrites it).
func TestOpenAPIGenerated(t *testing.T) {
	api := newOpenAPI()
	registerSandboxesOpenAPI(api)
	want, err := json.MarshalIndent(api.OpenAPI(), "", "  ")
	require.NoError(t, err)
	want = append(want, '\n')
	if *updateOpenAPI {
		require.NoError(t, os.WriteFile("openapi.json", want, 0o644))
		return
	}
	assert.Equal(t, string(want), string(openAPIJSON), "openapi.json is stale: run go test ./rpc -run TestOpenAPIGenerated -update")
}

// TestOpenAPIToolsAsHuma checks that the operations of the tools made at
// run time are those huma makes of their definitions.
func TestOpenAPIToolsAsHuma(t *testing.T) {
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	api := newOpenAPI()
	for _, spec := range tools.AllSpecs() {
		require.NoError(t, registerOpenAPI(api, spec), spec.Name)
		want, err := json.Marshal(api.OpenAPI().Paths["/v1/tools/"+spec.Name].Post)
		require.NoError(t, err)
		op, err := toolOperation(spec)
		require.NoError(t, err)
		got, err := json.Marshal(op)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got), spec.Name)
	}
}

// newOpenAPI is the huma API the document is generated with.
func newOpenAPI() huma.API {
	cfg := huma.DefaultConfig("boxsh", openAPIVersion)
	cfg.CreateHooks = nil // no $schema links in bodies
	cfg.DocsPath = ""     // no docs page pulling scripts from a CDN
	cfg.SchemasPath = ""
	cfg.OpenAPIPath = ""
	cfg.Info.Description = "REST twin of boxsh's MCP tools: POST the tool's arguments, get its MCP CallToolResult."
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "The token of boxsh --listen (see its token file)."},
	}
	cfg.Security = []map[string][]string{{"bearer": {}}}
	cfg.Servers = []*huma.Server{{URL: "/", Description: "The server that serves this document"}}
	return humago.New(http.NewServeMux(), cfg)
}

// registerOpenAPI describes POST /v1/tools/NAME.
func registerOpenAPI(api huma.API, spec *tool.Spec) error {
	in, err := hSchema(spec.InputSchema())
	if err != nil {
		return fmt.Errorf("%s input schema: %w", spec.Name, err)
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
	if len(spec.OutputSchema()) > 0 {
		out, err := hSchema(spec.OutputSchema())
		if err != nil {
			return fmt.Errorf("%s output schema: %w", spec.Name, err)
		}
		result.Properties["structuredContent"] = out
	}
	problem := map[string]*huma.MediaType{"application/problem+json": {Schema: &huma.Schema{Type: "object", AdditionalProperties: true}}}
	op := huma.Operation{
		OperationID: "tool-" + spec.Name,
		Method:      http.MethodPost,
		Path:        "/v1/tools/" + spec.Name,
		Summary:     spec.Annotations.Title,
		Description: spec.Description,
		Tags:        []string{"tools"},
		RequestBody: &huma.RequestBody{
			Description: "The tool's arguments",
			Content:     map[string]*huma.MediaType{"application/json": {Schema: in}},
		},
		Responses: map[string]*huma.Response{
			"200": {Description: "The MCP CallToolResult",
				Content: map[string]*huma.MediaType{"application/json": {Schema: result}}},
			"400": {Description: "Invalid arguments (the message tools/call gives as -32602)", Content: problem},
			"401": {Description: "A missing or wrong bearer token", Content: problem},
		},
	}
	huma.Register(api, op, func(context.Context, *struct{}) (*struct{}, error) { return nil, nil })
	// The handler above only describes; its empty output is no answer of
	// the twin's.
	delete(api.OpenAPI().Paths[op.Path].Post.Responses, "204")
	return nil
}

// registerSandboxesOpenAPI describes the management API of a server of
// many sandboxes (boxsh --sandboxes) and a sandbox's REST twin.
func registerSandboxesOpenAPI(api huma.API) {
	problem := map[string]*huma.MediaType{"application/problem+json": {Schema: &huma.Schema{Type: "object", AdditionalProperties: true}}}
	reg := api.OpenAPI().Components.Schemas
	info := reg.Schema(reflect.TypeFor[apitype.SandboxInfo](), true, "")
	req := reg.Schema(reflect.TypeFor[apitype.SandboxRequest](), true, "")
	stats := reg.Schema(reflect.TypeFor[tool.StatsOutput](), true, "")
	network := reg.Schema(reflect.TypeFor[apitype.NetworkPolicy](), true, "")
	change := reg.Schema(reflect.TypeFor[apitype.NetworkChange](), true, "")
	noop := func(context.Context, *struct{}) (*struct{}, error) { return nil, nil }
	ops := []huma.Operation{{
		OperationID: "sandbox-create", Method: http.MethodPost, Path: "/v1/sandboxes",
		Summary:     "Create a sandbox (boxsh --sandboxes)",
		Description: "Starts a sandbox with its own boxsh-init, workers, network namespace and copy-on-write view of the server's workspace (from workspace), an empty directory (from empty) or a snapshot's files (from snapshot:NAME). The answer carries the sandbox's bearer token, given only here: its endpoint takes it or the server's.",
		Tags:        []string{"sandboxes"},
		RequestBody: &huma.RequestBody{Content: map[string]*huma.MediaType{"application/json": {Schema: req}}},
		Responses: map[string]*huma.Response{
			"201": {Description: "The sandbox, with its endpoint and token", Content: map[string]*huma.MediaType{"application/json": {Schema: info}}},
			"400": {Description: "A bad name, from or disk (a disk above the server's --sandbox-disk)", Content: problem},
			"409": {Description: "The name is taken", Content: problem},
			"429": {Description: "A limit is reached (the detail names it)", Content: problem},
		},
	}, {
		OperationID: "sandbox-put", Method: http.MethodPut, Path: "/v1/sandboxes/{name}",
		Summary:     "Create a sandbox named in the path (boxsh --sandboxes)",
		Description: "The create of POST /v1/sandboxes with the sandbox's name in the path, so that a router in front of many servers can send it where the sandbox's later requests go (a hash of the name). The body is POST's, without a name (or with the same), or empty: a sandbox from workspace.",
		Tags:        []string{"sandboxes"},
		Parameters:  []*huma.Param{{Name: "name", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}}},
		RequestBody: &huma.RequestBody{Content: map[string]*huma.MediaType{"application/json": {Schema: req}}},
		Responses: map[string]*huma.Response{
			"201": {Description: "The sandbox, with its endpoint and token", Content: map[string]*huma.MediaType{"application/json": {Schema: info}}},
			"400": {Description: "A bad name, from or disk, or a body naming another sandbox", Content: problem},
			"409": {Description: "The name is taken", Content: problem},
			"429": {Description: "A limit is reached (the detail names it)", Content: problem},
			"503": {Description: "The server is shutting down (Retry-After)", Content: problem},
		},
	}, {
		OperationID: "sandbox-list", Method: http.MethodGet, Path: "/v1/sandboxes",
		Summary: "List the sandboxes", Tags: []string{"sandboxes"},
		Responses: map[string]*huma.Response{"200": {Description: "The sandboxes", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{
			Type: "object", Properties: map[string]*huma.Schema{"sandboxes": {Type: "array", Items: info}}}}}},
			"401": {Description: "A missing or wrong bearer token (a sandbox's token included)", Content: problem}},
	}, {
		OperationID: "sandbox-delete", Method: http.MethodDelete, Path: "/v1/sandboxes/{name}",
		Summary: "Delete a sandbox: its processes stop, its files go", Tags: []string{"sandboxes"},
		Parameters: []*huma.Param{{Name: "name", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}}},
		Responses: map[string]*huma.Response{
			"204": {Description: "Deleted"},
			"404": {Description: "No such sandbox", Content: problem},
		},
	}, {
		OperationID: "sandbox-token", Method: http.MethodPost, Path: "/v1/sandboxes/{name}/token",
		Summary:     "Give a sandbox a new token",
		Description: "Answers a new bearer token for the sandbox's endpoint, which replaces its old one. Tokens are not kept on disk: a sandbox hosted again after the server's restart takes the server's token only until this call gives it one.",
		Tags:        []string{"sandboxes"},
		Parameters:  []*huma.Param{{Name: "name", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}}},
		Responses: map[string]*huma.Response{
			"200": {Description: "The sandbox's name, endpoint and new token", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{
				Type: "object", Properties: map[string]*huma.Schema{"name": {Type: "string"}, "endpoint": {Type: "string"}, "token": {Type: "string"}}}}}},
			"404": {Description: "No such sandbox", Content: problem},
		},
	}, {
		OperationID: "sandbox-changes", Method: http.MethodGet, Path: "/v1/sandboxes/{name}/changes",
		Summary: "List a sandbox's changes to the workspace (as boxsh changes --json)", Tags: []string{"sandboxes"},
		Parameters: []*huma.Param{{Name: "name", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}}},
		Responses: map[string]*huma.Response{
			"200": {Description: "The changes", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Type: "object", AdditionalProperties: true}}}},
			"404": {Description: "No such sandbox", Content: problem},
		},
	}, {
		OperationID: "sandbox-diff", Method: http.MethodGet, Path: "/v1/sandboxes/{name}/diff",
		Summary: "The unified diff of a sandbox's changes (as boxsh diff)", Tags: []string{"sandboxes"},
		Parameters: []*huma.Param{
			{Name: "name", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}},
			{Name: "path", In: "query", Description: "Only this path's changes", Schema: &huma.Schema{Type: "string"}},
		},
		Responses: map[string]*huma.Response{
			"200": {Description: "The diff", Content: map[string]*huma.MediaType{"text/x-diff": {Schema: &huma.Schema{Type: "string"}}}},
			"404": {Description: "No such sandbox", Content: problem},
		},
	}, {
		OperationID: "sandbox-apply", Method: http.MethodPost, Path: "/v1/sandboxes/{name}/apply",
		Summary:     "Apply a sandbox's changes to the workspace (as boxsh apply)",
		Description: "Conflicts (paths the host changed since the sandbox started) and protected paths are refused, as boxsh apply refuses them.",
		Tags:        []string{"sandboxes"},
		Parameters:  []*huma.Param{{Name: "name", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}}},
		RequestBody: &huma.RequestBody{Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Type: "object", Properties: map[string]*huma.Schema{
			"dry_run": {Type: "boolean", Description: "Tell what would be applied; change nothing"},
			"paths":   {Type: "array", Items: &huma.Schema{Type: "string"}, Description: "Only these paths (relative to the workspace); none: all"},
		}}}}},
		Responses: map[string]*huma.Response{
			"200": {Description: "What was applied, refused and narrowed", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Type: "object", AdditionalProperties: true}}}},
			"404": {Description: "No such sandbox", Content: problem},
		},
	}, {
		OperationID: "sandbox-stats", Method: http.MethodGet, Path: "/v1/sandboxes/{name}/stats",
		Summary:     "Measure a sandbox (as its sandbox_stats tool)",
		Description: "Processor time, memory and processes (source: cgroup or proc), disk space of its changes, bytes through its network proxy, uptime: the structuredContent of its sandbox_stats.",
		Tags:        []string{"sandboxes"},
		Parameters:  []*huma.Param{{Name: "name", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}}},
		Responses: map[string]*huma.Response{
			"200": {Description: "What it uses", Content: map[string]*huma.MediaType{"application/json": {Schema: stats}}},
			"404": {Description: "No such sandbox", Content: problem},
		},
	}, {
		OperationID: "sandbox-network", Method: http.MethodGet, Path: "/v1/sandboxes/{name}/network",
		Summary:     "A sandbox's network lists in force (allowlist mode)",
		Description: "The allowed and denied domains its proxy decides by, each with its source: a settings file, a flag, or the client that added it.",
		Tags:        []string{"sandboxes"},
		Parameters:  []*huma.Param{{Name: "name", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}}},
		Responses: map[string]*huma.Response{
			"200": {Description: "The lists", Content: map[string]*huma.MediaType{"application/json": {Schema: network}}},
			"404": {Description: "No such sandbox", Content: problem},
			"409": {Description: "The sandbox's network mode has no lists (disabled, allow_all)", Content: problem},
		},
	}, {
		OperationID: "sandbox-network-change", Method: http.MethodPatch, Path: "/v1/sandboxes/{name}/network",
		Summary:     "Change a sandbox's network lists without a restart",
		Description: "Either replaces lists (allow, deny) or edits them (add_allow, remove_allow, add_deny, remove_deny), not both. New connections follow the new lists at once; open ones to destinations they refuse are closed. Takes the server's token only; the audit log records the change.",
		Tags:        []string{"sandboxes"},
		Parameters:  []*huma.Param{{Name: "name", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}}},
		RequestBody: &huma.RequestBody{Content: map[string]*huma.MediaType{"application/json": {Schema: change}}},
		Responses: map[string]*huma.Response{
			"200": {Description: "The lists now in force, and how many open connections were closed", Content: map[string]*huma.MediaType{"application/json": {Schema: network}}},
			"400": {Description: "A bad body or pattern (the detail names it); nothing changed", Content: problem},
			"404": {Description: "No such sandbox", Content: problem},
			"409": {Description: "The sandbox's network mode has no lists (disabled, allow_all)", Content: problem},
		},
	}, {
		OperationID: "sandbox-tool", Method: http.MethodPost, Path: "/s/{sandbox}/v1/tools/{tool}",
		Summary:     "Call a tool in a sandbox",
		Description: "The REST twin of /v1/tools/{tool} in sandbox {sandbox}: the same body and answer. Takes the sandbox's token or the server's. /s/{sandbox}/mcp is its MCP endpoint.",
		Tags:        []string{"sandboxes"},
		Parameters: []*huma.Param{
			{Name: "sandbox", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}},
			{Name: "tool", In: "path", Required: true, Schema: &huma.Schema{Type: "string"}},
		},
		RequestBody: &huma.RequestBody{Description: "The tool's arguments", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Type: "object", AdditionalProperties: true}}}},
		Responses: map[string]*huma.Response{
			"200": {Description: "The MCP CallToolResult", Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Type: "object", AdditionalProperties: true}}}},
			"400": {Description: "Invalid arguments", Content: problem},
			"401": {Description: "A missing or wrong bearer token (or an unknown sandbox, for a token other than the server's)", Content: problem},
			"404": {Description: "No such sandbox or tool", Content: problem},
		},
	}}
	ops = append(ops, snapshotOps(reg, info, problem)...)
	for _, op := range ops {
		huma.Register(api, op, noop)
	}
}

// snapshotOps describe the snapshots, forks and restores of a server of
// many sandboxes, and its management MCP endpoint.
func snapshotOps(reg huma.Registry, info *huma.Schema, problem map[string]*huma.MediaType) []huma.Operation {
	snap := reg.Schema(reflect.TypeFor[apitype.SnapshotInfo](), true, "")
	name := func(what string) *huma.Param {
		return &huma.Param{Name: "name", In: "path", Required: true, Description: what, Schema: &huma.Schema{Type: "string"}}
	}
	body := func(props map[string]*huma.Schema, required ...string) *huma.RequestBody {
		return &huma.RequestBody{Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Type: "object", Properties: props, Required: required}}}}
	}
	str := func(doc string) *huma.Schema { return &huma.Schema{Type: "string", Description: doc} }
	media := func(s *huma.Schema) map[string]*huma.MediaType {
		return map[string]*huma.MediaType{"application/json": {Schema: s}}
	}
	return []huma.Operation{{
		OperationID: "snapshot-create", Method: http.MethodPost, Path: "/v1/snapshots",
		Summary:     "Snapshot a sandbox",
		Description: "Freezes a sandbox's files (its copy-on-write layer: writes, deletions, replaced directories) as a named read-only snapshot. The sandbox's processes are paused (SIGSTOP, parents first) while the files are copied and continued after: writes wait, none is lost.",
		Tags:        []string{"snapshots"},
		RequestBody: body(map[string]*huma.Schema{"name": str("The snapshot's name, as a sandbox's"), "sandbox": str("The sandbox to snapshot")}, "name", "sandbox"),
		Responses: map[string]*huma.Response{
			"201": {Description: "The snapshot", Content: media(snap)},
			"400": {Description: "A bad name", Content: problem},
			"404": {Description: "No such sandbox", Content: problem},
			"409": {Description: "The name is taken", Content: problem},
			"429": {Description: "The snapshot limit is reached (the detail names it)", Content: problem},
		},
	}, {
		OperationID: "snapshot-list", Method: http.MethodGet, Path: "/v1/snapshots",
		Summary: "List the snapshots", Tags: []string{"snapshots"},
		Responses: map[string]*huma.Response{"200": {Description: "The snapshots", Content: media(&huma.Schema{
			Type: "object", Properties: map[string]*huma.Schema{"snapshots": {Type: "array", Items: snap}}})},
			"401": {Description: "A missing or wrong bearer token (a sandbox's token included)", Content: problem}},
	}, {
		OperationID: "snapshot-delete", Method: http.MethodDelete, Path: "/v1/snapshots/{name}",
		Summary: "Delete a snapshot (sandboxes started from it keep their files)", Tags: []string{"snapshots"},
		Parameters: []*huma.Param{name("The snapshot")},
		Responses: map[string]*huma.Response{
			"204": {Description: "Deleted"},
			"404": {Description: "No such snapshot", Content: problem},
		},
	}, {
		OperationID: "sandbox-fork", Method: http.MethodPost, Path: "/v1/sandboxes/{name}/fork",
		Summary:     "Fork a sandbox",
		Description: "Creates a sandbox with sandbox {name}'s files as they are now (a snapshot, paused as one, then a create from it). The answer carries the new sandbox's token.",
		Tags:        []string{"sandboxes", "snapshots"},
		Parameters:  []*huma.Param{name("The sandbox to fork")},
		RequestBody: body(map[string]*huma.Schema{"name": str("The new sandbox's name")}, "name"),
		Responses: map[string]*huma.Response{
			"201": {Description: "The new sandbox, with its endpoint and token", Content: media(info)},
			"404": {Description: "No such sandbox", Content: problem},
			"409": {Description: "The name is taken", Content: problem},
			"429": {Description: "A limit is reached (the detail names it)", Content: problem},
		},
	}, {
		OperationID: "sandbox-restore", Method: http.MethodPost, Path: "/v1/sandboxes/{name}/restore",
		Summary:     "Restore a sandbox to a snapshot",
		Description: "Stops every process of the sandbox (terminals and background processes end), replaces its files with the snapshot's and starts it again. Its endpoint and token stay. The snapshot must be of a sandbox of the same base (workspace or empty).",
		Tags:        []string{"sandboxes", "snapshots"},
		Parameters:  []*huma.Param{name("The sandbox")},
		RequestBody: body(map[string]*huma.Schema{"snapshot": str("The snapshot")}, "snapshot"),
		Responses: map[string]*huma.Response{
			"200": {Description: "The sandbox", Content: media(info)},
			"404": {Description: "No such sandbox or snapshot", Content: problem},
			"409": {Description: "The snapshot is of a sandbox of another base", Content: problem},
		},
	}, {
		OperationID: "manage-mcp", Method: http.MethodPost, Path: ManagePath,
		Summary: "The management API as MCP tools",
		// Description: naming the tools, it is made at run time (see
		// manageMCPDescription).
		Tags:        []string{"sandboxes", "snapshots"},
		RequestBody: &huma.RequestBody{Content: media(&huma.Schema{Type: "object", AdditionalProperties: true, Description: "A JSON-RPC message"})},
		Responses: map[string]*huma.Response{
			"200": {Description: "The JSON-RPC answer (application/json or text/event-stream)", Content: media(&huma.Schema{Type: "object", AdditionalProperties: true})},
			"401": {Description: "A missing or wrong bearer token (a sandbox's token included)", Content: problem},
		},
	}}
}

// hSchema decodes a JSON Schema into huma's form.
func hSchema(raw json.RawMessage) (*huma.Schema, error) {
	var sc huma.Schema
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, err
	}
	return &sc, nil
}

// TestOpenAPIPerMode checks that each kind of server documents what it
// serves and nothing else. The document names a server to send requests to,
// and has no schema that nothing refers to.
func TestOpenAPIPerMode(t *testing.T) {
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	type document struct {
		Servers    []map[string]string       `json:"servers"`
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	read := func(many bool) (document, string) {
		b, err := openAPIDocument("v1", many)
		require.NoError(t, err)
		if *openAPIOut != "" {
			name := map[bool]string{false: "single.json", true: "many.json"}[many]
			require.NoError(t, os.WriteFile(filepath.Join(*openAPIOut, name), b, 0o644))
		}
		var d document
		require.NoError(t, json.Unmarshal(b, &d))
		return d, string(b)
	}
	single, singleText := read(false)
	many, manyText := read(true)
	for _, d := range []document{single, many} {
		require.Len(t, d.Servers, 1)
		assert.Equal(t, "/", d.Servers[0]["url"])
	}
	for p := range single.Paths {
		assert.True(t, strings.HasPrefix(p, "/v1/tools/"), "a single sandbox serves only its tools: %s", p)
	}
	for _, sp := range tools.AllSpecs() {
		assert.Contains(t, single.Paths, "/v1/tools/"+sp.Name)
		assert.NotContains(t, many.Paths, "/v1/tools/"+sp.Name, "a server of many answers 404 there")
	}
	for _, p := range []string{"/v1/sandboxes", "/v1/sandboxes/{name}", "/v1/snapshots", "/s/{sandbox}/v1/tools/{tool}", ManagePath} {
		assert.Contains(t, many.Paths, p)
		assert.NotContains(t, single.Paths, p, "a single sandbox has no management API")
	}
	for name := range single.Components.Schemas {
		assert.Contains(t, singleText, `"#/components/schemas/`+name+`"`, "a schema of the document is used")
	}
	for name := range many.Components.Schemas {
		assert.Contains(t, manyText, `"#/components/schemas/`+name+`"`, "a schema of the document is used")
	}
	assert.NotContains(t, single.Components.Schemas, "SandboxInfo")
	assert.Contains(t, many.Components.Schemas, "SandboxInfo")
}
