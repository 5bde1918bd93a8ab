package runtime

import (
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/host"
)

// withNetwork gives cfg the network policy that may change while its
// sandbox runs (cfg.Proxy.Network), when its sandbox has a proxy: in
// allowlist mode. A policy given already (a sandbox restored from a
// snapshot keeps its lists) is kept.
func withNetwork(cfg *Config) error {
	if cfg.Proxy.Network != nil || !cfg.Sandbox.Enabled && !cfg.Sandbox.Try {
		return nil
	}
	if mode, _ := cfg.Policy.Network(); mode != policy.NetworkAllowlist {
		return nil
	}
	n, err := host.NewNetwork(cfg.Policy)
	if err != nil {
		return err
	}
	cfg.Proxy.Network = n
	return nil
}

// Network returns the network policy of the sandbox, which the front may
// change while it runs, or nil when the sandbox has no proxy (its network
// is disabled or open to all, or it is no sandbox).
func (s *Supervisor) Network() *host.Network { return s.cfg.Proxy.Network }

// NoNetworkWhy says why a sandbox of cfg has no network lists to read or
// change (Supervisor.Network is nil), for a refusal.
func NoNetworkWhy(cfg Config) string {
	if !cfg.Sandbox.Enabled && !cfg.Sandbox.Try {
		return "boxsh runs without --sandbox: there is no network proxy, so no network lists to change"
	}
	mode, _ := cfg.Policy.Network()
	switch mode {
	case policy.NetworkDisabled:
		return "the sandbox's network is disabled: it has no proxy, so no network lists to change (start it with --network allowlist)"
	case policy.NetworkAllowAll:
		return "the sandbox's network is allow_all: every destination is reachable and no rules apply, so there are no network lists to change (start it with --network allowlist)"
	}
	return "the sandbox has no network lists to change"
}
