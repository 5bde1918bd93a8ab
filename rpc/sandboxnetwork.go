package rpc

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/tool"
)

// The network lists of a running sandbox in allowlist mode, read and
// changed without a restart:
//
//	GET   /v1/sandboxes/NAME/network   the lists in force, each rule with its source
//	PATCH /v1/sandboxes/NAME/network   change them (an apitype.NetworkChange)
//
// and the management tool sandbox_network. A server of one sandbox serves
// the same at /v1/network (NetworkHandler). They take the server's token
// only: a sandbox's own token is refused, and nothing inside the sandbox
// reaches the front's listener. A change takes effect for the connections
// that follow at once; the open ones the new lists refuse are closed. Each
// change is an entry of the audit log.

// NetworkLists reads and changes the network lists of one running sandbox.
type NetworkLists interface {
	// Network is the lists in force.
	Network() apitype.NetworkPolicy
	// UpdateNetwork puts in force the lists that change makes of those in
	// force, and closes the open connections they refuse (the new
	// policy's Closed). Updates are serialised. An error of change, or an
	// invalid pattern (a *SandboxError 400 naming it), changes nothing.
	UpdateNetwork(change func(apitype.NetworkPolicy) (apitype.NetworkPolicy, error)) (old, new apitype.NetworkPolicy, err error)
}

// SandboxNetwork gives the network lists of the sandboxes of a
// SandboxHost that has it; the router answers 501 for another.
type SandboxNetwork interface {
	// NetworkOf is the lists of sandbox name. No such sandbox is a
	// *SandboxError 404; one whose network mode has no lists (disabled,
	// allow_all) a *SandboxError 409 that says why.
	NetworkOf(name string) (NetworkLists, error)
}

// networkShape describes the body of a change, for a refusal.
const networkShape = `{"allow": [PATTERN...], "deny": [PATTERN...]} or {"add_allow": [...], "remove_allow": [...], "add_deny": [...], "remove_deny": [...]}`

// serveNetwork registers the network paths of the management API on mux.
func (rt *SandboxRouter) serveNetwork(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sandboxes/{name}/network", func(w http.ResponseWriter, r *http.Request) {
		lists, err := rt.networkOf(r.PathValue("name"))
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, lists.Network())
	})
	mux.HandleFunc("PATCH /v1/sandboxes/{name}/network", func(w http.ResponseWriter, r *http.Request) {
		var c apitype.NetworkChange
		if !decodeBody(w, r, &c, networkShape) {
			return
		}
		p, err := rt.changeNetwork(r.PathValue("name"), c, restClient(r))
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, p)
	})
}

// forbidNetwork answers the network paths of a sandbox's own endpoint
// (/s/NAME/v1/network): its token may not change its policy.
func forbidNetwork(w http.ResponseWriter, _ *http.Request) {
	writeProblem(w, http.StatusForbidden, "a sandbox's network policy is changed with the server's token, at /v1/sandboxes/NAME/network, not through the sandbox's endpoint")
}

// networkOf is the network lists of sandbox name.
func (rt *SandboxRouter) networkOf(name string) (NetworkLists, error) {
	sn, ok := rt.host.(SandboxNetwork)
	if !ok {
		return nil, &SandboxError{Status: http.StatusNotImplemented, Msg: "this server cannot change the network policy of its sandboxes"}
	}
	return sn.NetworkOf(name)
}

// changeNetwork makes change c, asked by client, to sandbox name's lists,
// and records it in the audit log (Managed).
func (rt *SandboxRouter) changeNetwork(name string, c apitype.NetworkChange, client string) (apitype.NetworkPolicy, error) {
	began := time.Now()
	lists, err := rt.networkOf(name)
	if err != nil {
		return apitype.NetworkPolicy{}, err
	}
	old, p, err := ChangeNetwork(lists, c, client)
	rt.managed(SandboxCall{Action: "network", Name: name, Client: client, Args: NetworkAudit(c, old, p, err), Began: began, Err: err})
	return p, err
}

// ChangeNetwork makes change c, asked by client (the source of the
// patterns it adds), to lists. It returns the lists before and after.
func ChangeNetwork(lists NetworkLists, c apitype.NetworkChange, client string) (old, p apitype.NetworkPolicy, err error) {
	return lists.UpdateNetwork(func(cur apitype.NetworkPolicy) (apitype.NetworkPolicy, error) {
		return applyNetworkChange(cur, c, client)
	})
}

// applyNetworkChange is the policy c makes of cur; the patterns it adds
// have source as their source, and those it keeps keep theirs.
func applyNetworkChange(cur apitype.NetworkPolicy, c apitype.NetworkChange, source string) (apitype.NetworkPolicy, error) {
	bad := func(format string, args ...any) (apitype.NetworkPolicy, error) {
		return apitype.NetworkPolicy{}, &SandboxError{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
	}
	edit := len(c.AddAllow)+len(c.RemoveAllow)+len(c.AddDeny)+len(c.RemoveDeny) > 0
	switch {
	case c.Empty():
		return bad("the change changes nothing: the body must be %s", networkShape)
	case edit && (c.Allow != nil || c.Deny != nil):
		return bad("a change either replaces lists (allow, deny) or edits them (add_allow, remove_allow, add_deny, remove_deny), not both")
	}
	next := apitype.NetworkPolicy{Mode: cur.Mode, Allow: cur.Allow, Deny: cur.Deny}
	if c.Allow != nil {
		next.Allow = replaceRules(cur.Allow, *c.Allow, source)
	}
	if c.Deny != nil {
		next.Deny = replaceRules(cur.Deny, *c.Deny, source)
	}
	var err error
	if next.Allow, err = editRules("allow", next.Allow, c.AddAllow, c.RemoveAllow, source); err != nil {
		return bad("%v", err)
	}
	if next.Deny, err = editRules("deny", next.Deny, c.AddDeny, c.RemoveDeny, source); err != nil {
		return bad("%v", err)
	}
	return next, nil
}

// replaceRules is the list of patterns, each with its source in cur if it
// is there, else source.
func replaceRules(cur []apitype.NetworkRule, patterns []string, source string) []apitype.NetworkRule {
	out := []apitype.NetworkRule{}
	for _, p := range patterns {
		if slices.ContainsFunc(out, func(r apitype.NetworkRule) bool { return r.Pattern == p }) {
			continue
		}
		r := apitype.NetworkRule{Pattern: p, Source: source}
		if i := slices.IndexFunc(cur, func(r apitype.NetworkRule) bool { return r.Pattern == p }); i >= 0 {
			r = cur[i]
		}
		out = append(out, r)
	}
	return out
}

// editRules is cur without remove and with add (those not in it yet); a
// pattern of remove not in cur is an error.
func editRules(list string, cur []apitype.NetworkRule, add, remove []string, source string) ([]apitype.NetworkRule, error) {
	out := slices.Clone(cur)
	for _, p := range remove {
		i := slices.IndexFunc(out, func(r apitype.NetworkRule) bool { return r.Pattern == p })
		if i < 0 {
			return nil, fmt.Errorf("remove_%s: %q is not in the %s list", list, p, list)
		}
		out = slices.Delete(out, i, i+1)
	}
	for _, p := range add {
		if !slices.ContainsFunc(out, func(r apitype.NetworkRule) bool { return r.Pattern == p }) {
			out = append(out, apitype.NetworkRule{Pattern: p, Source: source})
		}
	}
	if out == nil {
		out = []apitype.NetworkRule{}
	}
	return out, nil
}

// NetworkAudit is what the audit log keeps of change c, which made p of
// old (or failed with err): the change as asked and, once made, the lists
// before and after.
func NetworkAudit(c apitype.NetworkChange, old, p apitype.NetworkPolicy, err error) map[string]any {
	a := map[string]any{}
	for k, v := range map[string][]string{"add_allow": c.AddAllow, "remove_allow": c.RemoveAllow, "add_deny": c.AddDeny, "remove_deny": c.RemoveDeny} {
		if len(v) > 0 {
			a[k] = v
		}
	}
	if c.Allow != nil {
		a["allow"] = *c.Allow
	}
	if c.Deny != nil {
		a["deny"] = *c.Deny
	}
	if err == nil {
		a["before"] = map[string][]string{"allow": patterns(old.Allow), "deny": patterns(old.Deny)}
		a["after"] = map[string][]string{"allow": patterns(p.Allow), "deny": patterns(p.Deny)}
		if p.Closed > 0 {
			a["closed"] = p.Closed
		}
	}
	return a
}

func patterns(rs []apitype.NetworkRule) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Pattern
	}
	return out
}

// NetworkHandler serves the network lists of a server of one sandbox:
// GET /v1/network and PATCH /v1/network, behind the server's token as the
// REST twin is. With lists nil (a network mode without lists, or no
// sandbox), both answer 409 with why. changed, if set, is told each change
// asked for (the audit log records it).
func NetworkHandler(lists NetworkLists, why string, changed func(client string, c apitype.NetworkChange, old, p apitype.NetworkPolicy, err error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/network", func(w http.ResponseWriter, _ *http.Request) {
		if lists == nil {
			writeProblem(w, http.StatusConflict, why)
			return
		}
		writeJSON(w, http.StatusOK, lists.Network())
	})
	mux.HandleFunc("PATCH /v1/network", func(w http.ResponseWriter, r *http.Request) {
		if lists == nil {
			writeProblem(w, http.StatusConflict, why)
			return
		}
		var c apitype.NetworkChange
		if !decodeBody(w, r, &c, networkShape) {
			return
		}
		old, p, err := ChangeNetwork(lists, c, restClient(r))
		if changed != nil {
			changed(restClient(r), c, old, p, err)
		}
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, p)
	})
	return mux
}

// networkTool runs sandbox_network: it reads the lists of a sandbox, or
// changes them when the arguments name a change.
func networkTool(ctx context.Context, rt *SandboxRouter, a tool.SandboxNetworkArgs) (any, error) {
	c := apitype.NetworkChange{Allow: a.Allow, Deny: a.Deny, AddAllow: a.AddAllow, RemoveAllow: a.RemoveAllow, AddDeny: a.AddDeny, RemoveDeny: a.RemoveDeny}
	if c.Empty() {
		lists, err := rt.networkOf(a.Sandbox)
		if err != nil {
			return nil, err
		}
		return lists.Network(), nil
	}
	return rt.changeNetwork(a.Sandbox, c, ClientOf(ctx))
}
