package rpc

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

// IsLoopback reports whether a listen address (host:port) is on loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// originAllowed is the DNS-rebinding check. A browser's Origin must be a
// loopback one or listed. When no token guards the server, the Host must
// be too, since a rebound name reaches loopback with a foreign Host; not
// on a Unix socket, which no name reaches.
func (t *httpTransport) originAllowed(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		if slices.Contains(t.opts.AllowedOrigins, o) {
			return true
		}
		u, err := url.Parse(o)
		if err != nil || !loopbackHost(u.Hostname()) {
			return false
		}
	}
	if t.opts.Token == "" && !onUnixSocket(r) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		return loopbackHost(strings.Trim(host, "[]"))
	}
	return true
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (t *httpTransport) authorized(r *http.Request) bool {
	if t.opts.Token == "" {
		return true
	}
	return bearerIs(r, t.opts.Token) || slices.ContainsFunc(t.opts.ExtraTokens, func(tok string) bool { return bearerIs(r, tok) })
}

// bearerIs reports whether r carries the bearer token tok (not empty).
func bearerIs(r *http.Request, tok string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && tok != "" && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(tok)) == 1
}

// writeUnauthorized refuses a request without the right bearer token: a
// JSON-RPC error on an MCP endpoint (/mcp, /s/NAME/mcp, /v1/manage/mcp),
// a problem (RFC 9457) on REST.
func writeUnauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="boxsh"`)
	const msg = "missing or wrong bearer token"
	if path.Base(r.URL.Path) == "mcp" {
		writeHTTPError(w, http.StatusUnauthorized, nil, CodeInvalidRequest, msg)
		return
	}
	writeProblem(w, http.StatusUnauthorized, msg)
}
