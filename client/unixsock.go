package client

import (
	"context"
	"net"
	"net/http"
	"strings"
)

// unixBase splits a base URL http://unix:PATH: (the form a server on
// --listen unix:PATH prints) into PATH, and whether it is one.
func unixBase(baseURL string) (string, bool) {
	rest, ok := strings.CutPrefix(baseURL, "http://unix:")
	if !ok {
		return "", false
	}
	path, ok := strings.CutSuffix(strings.TrimSuffix(rest, "/"), ":")
	if !ok || path == "" {
		return "", false
	}
	return path, true
}

// UnixSocketTransport returns an HTTP transport whose connections all go
// to the Unix socket at path, whatever the URL's host.
//
// It is what NewServer uses for a base URL http://unix:PATH:.
func UnixSocketTransport(path string) *http.Transport {
	return unixTransport(http.DefaultTransport.(*http.Transport), path)
}

// unixTransport is a clone of base that dials the Unix socket at path.
func unixTransport(base *http.Transport, path string) *http.Transport {
	t := base.Clone()
	t.Proxy = nil
	var d net.Dialer
	t.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}
	return t
}

// onUnixSocket returns the base URL and client that reach the server at
// a base URL http://unix:PATH: over the socket, hc's Transport (an
// *http.Transport or nil) cloned with a dialer of PATH; any other base
// URL, or another kind of Transport, is returned as it is.
func onUnixSocket(baseURL string, hc *http.Client) (string, *http.Client) {
	path, ok := unixBase(baseURL)
	if !ok {
		return baseURL, hc
	}
	c := *hc
	switch tr := c.Transport.(type) {
	case nil:
		c.Transport = UnixSocketTransport(path)
	case *http.Transport:
		c.Transport = unixTransport(tr, path)
	}
	return "http://localhost", &c
}
