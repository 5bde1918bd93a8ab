package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/rpc"
)

// httpListener is the listener of --listen, opened before the sandbox
// starts so that a bad address fails at once.
type httpListener struct {
	ln   net.Listener
	opts rpc.HTTPOptions
	// tokenPath is the token file boxsh made (removed at exit), if any.
	tokenPath string
	// network, if set, serves /v1/network (the sandbox's network lists).
	network http.Handler
}

// listenHTTP reads or makes the bearer token and opens the listener.
func listenHTTP(opts options) (*httpListener, error) {
	h := &httpListener{}
	if !opts.noAuth {
		path := opts.tokenFile
		var token string
		var err error
		if path == "" {
			// A token of its own, never one found in the file.
			if path, err = rpc.DefaultTokenPath(); err == nil {
				token, err = rpc.CreateToken(path)
				h.tokenPath = path
			}
		} else {
			token, _, err = rpc.LoadOrCreateToken(path)
		}
		if err != nil {
			return nil, err
		}
		h.opts.Token = token
		fmt.Fprintf(os.Stderr, "boxsh: bearer token in %s\n", path)
	}
	ln, err := rpc.Listen(opts.listen, h.opts)
	if err != nil {
		h.close()
		return nil, err
	}
	h.ln = ln
	return h, nil
}

// close closes the listener (which removes a Unix socket) and removes
// the token file boxsh made.
func (h *httpListener) close() {
	if h.ln != nil {
		_ = h.ln.Close()
	}
	if h.tokenPath != "" {
		_ = os.Remove(h.tokenPath)
	}
}

// serve serves MCP (and the REST twin) over HTTP until ctx ends.
func (h *httpListener) serve(ctx context.Context, srv *rpc.Server, log hclog.Logger) error {
	defer h.close()
	rest, err := rpc.RESTHandler(srv)
	if err != nil {
		return err
	}
	h.opts.Extra = withNetworkPaths(rest, h.network)
	proc.OneProc() // once boxsh-init runs: its start is not slowed
	fmt.Fprintf(os.Stderr, "boxsh: MCP on %s/mcp\n", rpc.BaseURL(h.ln.Addr()))
	log.Info("serving MCP over streamable HTTP", "addr", h.ln.Addr().String(), "auth", h.opts.Token != "")
	return srv.ServeStreamable(ctx, h.ln, h.opts)
}
