package fleet

import (
	"errors"
	"net/http"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/rpc"
	"github.com/boxsh/boxsh/runtime"
	"github.com/boxsh/boxsh/runtime/host"
)

var _ rpc.SandboxNetwork = (*Manager)(nil)

// NetworkOf is the network lists of sandbox name, which may change while
// it runs (rpc.SandboxNetwork). A restore keeps them.
func (m *Manager) NetworkOf(name string) (rpc.NetworkLists, error) {
	sb := m.Get(name)
	if sb == nil {
		return nil, &rpc.SandboxError{Status: http.StatusNotFound, Msg: "no sandbox " + name}
	}
	sb.swap.RLock()
	n := sb.net
	sb.swap.RUnlock()
	if n == nil {
		return nil, &rpc.SandboxError{Status: http.StatusConflict, Msg: runtime.NoNetworkWhy(m.cfg.Runtime)}
	}
	return Lists(n), nil
}

// Lists is n as the rpc package reads and changes it.
func Lists(n *host.Network) rpc.NetworkLists { return networkLists{n} }

type networkLists struct{ n *host.Network }

func (l networkLists) Network() apitype.NetworkPolicy {
	allowed, denied := l.n.Lists()
	return toPolicy(allowed, denied)
}

func (l networkLists) UpdateNetwork(change func(apitype.NetworkPolicy) (apitype.NetworkPolicy, error)) (old, p apitype.NetworkPolicy, err error) {
	var changed bool
	closed, err := l.n.Update(func(allowed, denied []policy.Rule) ([]policy.Rule, []policy.Rule, error) {
		old = toPolicy(allowed, denied)
		if p, err = change(old); err != nil {
			return nil, nil, err
		}
		changed = true
		return fromRules(p.Allow), fromRules(p.Deny), nil
	})
	var se *rpc.SandboxError
	if err != nil && changed && !errors.As(err, &se) {
		// The new lists did not compile: a bad pattern.
		err = &rpc.SandboxError{Status: http.StatusBadRequest, Msg: err.Error()}
	}
	if err != nil {
		return old, apitype.NetworkPolicy{}, err
	}
	p = l.Network()
	p.Closed = closed
	return old, p, nil
}

func toPolicy(allowed, denied []policy.Rule) apitype.NetworkPolicy {
	return apitype.NetworkPolicy{Mode: policy.NetworkAllowlist, Allow: toRules(allowed), Deny: toRules(denied)}
}

func toRules(rs []policy.Rule) []apitype.NetworkRule {
	out := make([]apitype.NetworkRule, len(rs))
	for i, r := range rs {
		out[i] = apitype.NetworkRule{Pattern: r.Value, Source: string(r.Source)}
	}
	return out
}

func fromRules(rs []apitype.NetworkRule) []policy.Rule {
	out := make([]policy.Rule, len(rs))
	for i, r := range rs {
		out[i] = policy.Rule{Value: r.Pattern, Source: policy.Source(r.Source)}
	}
	return out
}
