package host

import (
	"fmt"
	"slices"
	"sync"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/policy"
)

// Network is the network policy of an allowlist sandbox, which the front
// may change while the sandbox runs.
//
// Its proxy decides every new connection by the lists in force (see
// proxy.Live), and the lists outlive a restart of boxsh-init: the next
// proxy of the sandbox starts with them. Each rule keeps its source (a
// settings file, a flag, or who changed it). It is safe for concurrent use.
type Network struct {
	live *proxy.Live

	mu              sync.Mutex
	allowed, denied []policy.Rule
}

// NewNetwork returns the network policy of p: its allowed and denied
// domains. An invalid pattern is an error that names it.
func NewNetwork(p policy.Policy) (*Network, error) {
	rules, err := proxy.NewRules(policy.Values(p.AllowedDomains), policy.Values(p.DeniedDomains))
	if err != nil {
		return nil, fmt.Errorf("network policy: %w", err)
	}
	return &Network{live: proxy.NewLive(rules), allowed: slices.Clone(p.AllowedDomains), denied: slices.Clone(p.DeniedDomains)}, nil
}

// Lists returns the allowed and denied domains in force, with their
// sources.
func (n *Network) Lists() (allowed, denied []policy.Rule) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.allowed), slices.Clone(n.denied)
}

// Set puts allowed and denied in force for the connections to come, and
// closes the open ones that they refuse; it returns how many it closed. An
// invalid pattern is an error that names it, and changes nothing.
func (n *Network) Set(allowed, denied []policy.Rule) (closed int, err error) {
	return n.Update(func(_, _ []policy.Rule) ([]policy.Rule, []policy.Rule, error) { return allowed, denied, nil })
}

// Update is Set of the lists that change makes of those in force. Updates
// are serialised: change sees the lists of the previous one. An error of
// change changes nothing.
func (n *Network) Update(change func(allowed, denied []policy.Rule) ([]policy.Rule, []policy.Rule, error)) (closed int, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	allowed, denied, err := change(slices.Clone(n.allowed), slices.Clone(n.denied))
	if err != nil {
		return 0, err
	}
	rules, err := proxy.NewRules(policy.Values(allowed), policy.Values(denied))
	if err != nil {
		return 0, err
	}
	n.allowed, n.denied = slices.Clone(allowed), slices.Clone(denied)
	return n.live.Set(rules), nil
}

// source names where the denied rule came from, for the explanation of a
// refusal by it.
func (n *Network) source(rule string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return ruleSource(n.denied)(rule)
}
