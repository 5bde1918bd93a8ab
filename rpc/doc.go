// Package rpc is boxsh's MCP server: JSON-RPC 2.0 over stdio or streamable HTTP.
//
// A Server answers the MCP methods itself and forwards every tools/call to
// its Backend: boxsh-init, or one sandbox of many. Each response is written
// as soon as it is ready. The server speaks both protocol eras on the same
// stream: the initialize era (2024-11-05 to 2025-11-25) and the stateless
// one (2026-07-28 on).
//
// The server's jobs, and where to start reading:
//   - MCP over stdio: Server.Serve, with the Tasks extension for bash and
//     progress notifications.
//   - Streamable HTTP: Listen, Server.ServeStreamable and HTTPHandler, with
//     their HTTPOptions (bearer tokens, allowed origins, bounds).
//   - The tools' REST twin: RESTHandler and Server.CallTool.
//   - Many sandboxes behind one listener: SandboxRouter serves the
//     management API and each sandbox's endpoint; a SandboxHost (the fleet)
//     starts and stops the sandboxes. ServeStarting answers while the
//     fleet starts; behind a router of many servers, HTTPOptions.ServerID
//     and Ready name the server and answer the probes.
package rpc

// The files, by job:
//   - stdio: server.go (methods, dispatch, errors), transport.go (framing),
//     modern.go (the stateless era), progress.go, listen.go
//     (subscriptions/listen), tasks.go;
//   - HTTP: http.go (the transport), httpout.go (JSON and SSE answers),
//     mcpsession.go (Mcp-Session-Id sessions), httpauth.go (origins and
//     tokens), token.go (the token file), conns.go and fair.go (bounds),
//     who.go (who a call came from), unixsock.go (the listener on a Unix
//     socket);
//   - REST: rest.go;
//   - many sandboxes: sandboxhost.go, sandboxes.go, sandboxfiles.go,
//     sandboxtoken.go, sessionsandbox.go, manage.go (the management tools),
//     starting.go (the answers while the fleet starts).
