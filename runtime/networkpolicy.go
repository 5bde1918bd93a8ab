package runtime

import (
	"context"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
)

// init registers the handler of the network_policy tool.
func init() {
	tool.Handle(frontTools, tool.NetworkPolicyDef, func(_ context.Context, s *Supervisor, _ tool.NoArgs) (tool.Result, error) {
		return tool.StructuredResult(s.networkPolicy()), nil
	})
}

// networkPolicy is what the sandbox's network allows now: the live lists
// in allowlist mode, none in the other modes.
func (s *Supervisor) networkPolicy() tool.NetworkPolicyOutput {
	mode, _ := s.cfg.Policy.Network()
	out := tool.NetworkPolicyOutput{Mode: mode, Allowed: []string{}, Denied: []string{}}
	if mode != policy.NetworkAllowlist {
		return out
	}
	allowed, denied := s.cfg.Policy.AllowedDomains, s.cfg.Policy.DeniedDomains
	if n := s.Network(); n != nil {
		allowed, denied = n.Lists()
	}
	out.Allowed = append(out.Allowed, policy.Values(allowed)...)
	out.Denied = append(out.Denied, policy.Values(denied)...)
	return out
}
