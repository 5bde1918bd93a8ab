package rpc

import (
	"net/http"

	"github.com/boxsh/boxsh/client/apitype"
)

// serveToken answers POST /v1/sandboxes/NAME/token: a new token for
// sandbox NAME, which replaces its old one (whose sessions end). Tokens
// are not kept on disk: a sandbox hosted again after a restart answers the
// server's token only until this call gives it one.
func (rt *SandboxRouter) serveToken(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, ok := rt.host.Lookup(name)
	if !ok {
		writeProblem(w, http.StatusNotFound, "no sandbox "+name)
		return
	}
	ep, err := rt.newEndpoint(name, b, "")
	if err != nil {
		writeSandboxError(w, err)
		return
	}
	rt.mu.Lock()
	old := rt.eps[name]
	if old != nil {
		ep.limit = old.limit // a new token is no new allowance
	}
	rt.eps[name] = ep
	rt.mu.Unlock()
	if old != nil {
		old.h.Close()
	}
	writeJSON(w, http.StatusOK, apitype.TokenResponse{Name: name, Endpoint: "/s/" + name + "/mcp", Token: ep.token})
}
