// Package rpc is boxsh's MCP server: JSON-RPC 2.0 over stdio or streamable HTTP.
//
// A Server answers the MCP methods itself and forwards every tools/call to a
// Backend: boxsh-init, through frames, or one sandbox of many. Each response
// is written as soon as it is ready.
//
// The files of the package, by job:
//   - MCP over stdio: server.go (methods, dispatch, errors), transport.go
//     (Content-Length or newline framing), modern.go (the stateless
//     2026-07-28 era beside the initialize era), progress.go, listen.go
//     (subscriptions/listen), tasks.go (the Tasks extension for bash).
//   - Streamable HTTP: http.go (the transport and its options), httpout.go
//     (JSON and SSE answers), mcpsession.go (Mcp-Session-Id sessions of
//     the initialize era), httpauth.go (origins and bearer tokens), token.go
//     (the token file), conns.go and fair.go (connection and request bounds),
//     who.go (who a call came from, for the audit log).
//   - The REST twin of the tools: rest.go, with its OpenAPI document.
//   - Many sandboxes behind one listener: sandboxhost.go (what the fleet
//     provides), sandboxes.go (the router, create, list, delete),
//     sandboxfiles.go (changes and snapshots), sandboxtoken.go,
//     sessionsandbox.go (a sandbox per MCP session on /mcp), manage.go (the
//     management tools).
package rpc
