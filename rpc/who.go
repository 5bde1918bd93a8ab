package rpc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// clientKey is the context key of a call's client (see ClientOf).
type clientKey struct{}

// withClient marks ctx as a call of client.
func withClient(ctx context.Context, client string) context.Context {
	if client == "" {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, client)
}

// ClientOf names the client of a call, from the context Backend.Start
// gets. The name is one of:
//   - "stdio";
//   - "http session HASH" for an HTTP client with an MCP session;
//   - "http ADDRESS" for an HTTP client without one;
//   - "rest ADDRESS" for a client of the REST twin;
//   - "" when unknown.
//
// HASH is the first 12 hex digits of the SHA-256 of the Mcp-Session-Id.
// The id itself is not given, since it lets its bearer use the session.
func ClientOf(ctx context.Context) string {
	s, _ := ctx.Value(clientKey{}).(string)
	return s
}

// sessionClient is the client name of the HTTP session id.
func sessionClient(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "http session " + hex.EncodeToString(sum[:6])
}

// restClient names the client of a REST request (a tool's twin, or a
// management call of many sandboxes).
func restClient(r *http.Request) string { return "rest " + r.RemoteAddr }
