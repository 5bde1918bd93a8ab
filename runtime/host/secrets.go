package host

import (
	"fmt"
	"strings"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/policy"
)

// Secrets are what a sandbox's secrets make: the proxy's, with their
// values, and the variables of the sandbox's environment, with stand-ins.
type Secrets struct {
	Proxy *proxy.Secrets
	Env   []string
}

// PrepareSecrets takes the values of p's secrets from getenv and makes a
// new stand-in for each, as one sandbox's start does.
func PrepareSecrets(p policy.Policy, getenv func(string) (string, bool)) (Secrets, error) {
	if len(p.Secrets) == 0 {
		return Secrets{}, nil
	}
	if mode, _ := p.Network(); mode != policy.NetworkAllowlist {
		s := p.Secrets[0]
		return Secrets{}, fmt.Errorf("%w: secret %s (%s) needs the allowlist network mode, not %s: the proxy puts it in requests", policy.ErrUsage, s.Env, s.Source, mode)
	}
	var list []proxy.Secret
	var env []string
	for _, s := range p.Secrets {
		value, ok := getenv(s.Env)
		if !ok || value == "" {
			return Secrets{}, fmt.Errorf("%w: secret %s (%s): $%s is not set in boxsh's environment", policy.ErrUsage, s.Env, s.Source, s.Env)
		}
		standIn, err := proxy.NewStandIn(value)
		if err != nil {
			return Secrets{}, fmt.Errorf("%w: secret %s (%s): %v", policy.ErrUsage, s.Env, s.Source, err)
		}
		list = append(list, proxy.Secret{Name: s.Env, Value: value, StandIn: standIn, Hosts: s.Hosts, Headers: s.Headers})
		env = append(env, s.Env+"="+standIn)
	}
	set, err := proxy.NewSecrets(list)
	if err != nil {
		return Secrets{}, fmt.Errorf("%w: %v", policy.ErrUsage, err)
	}
	return Secrets{Proxy: set, Env: env}, nil
}

// WithEnv is env with the variables of vars ("NAME=VALUE") replacing any
// of the same names.
func WithEnv(env, vars []string) []string {
	if len(vars) == 0 {
		return env
	}
	names := map[string]bool{}
	for _, kv := range vars {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	var out []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			out = append(out, kv)
		}
	}
	return append(out, vars...)
}
