package plan

import (
	"strings"

	"github.com/boxsh/boxsh/internal/initproto"
)

// proxyEnvAt returns the variables that point commands (curl, git, npm, pip,
// go) at the proxy on listen.
//
// In a sandbox, listen is boxsh-init's forwarder on its loopback
// (initproto.ProxyListen). For the macOS front, it is "127.0.0.1:PORT" on the
// host's loopback.
func proxyEnvAt(listen string) []string {
	httpURL, socksURL := "http://"+listen, "socks5h://"+listen
	noProxy := "localhost,127.0.0.1,::1"
	var env []string
	for _, kv := range [][2]string{
		{"HTTP_PROXY", httpURL}, {"HTTPS_PROXY", httpURL}, {"ALL_PROXY", socksURL}, {"NO_PROXY", noProxy},
	} {
		env = append(env, kv[0]+"="+kv[1], strings.ToLower(kv[0])+"="+kv[1])
	}
	return env
}

// withProxyEnv is env with the variables of the sandbox's proxy
// (proxyEnvAt initproto.ProxyListen) replacing any proxy variables.
func withProxyEnv(env []string) []string { return WithProxyEnvAt(env, initproto.ProxyListen) }

// WithProxyEnvAt returns env with any proxy variables replaced by those
// that point commands (curl, git, npm, pip, go) at the proxy on listen.
func WithProxyEnvAt(env []string, listen string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
			continue
		}
		out = append(out, kv)
	}
	return append(out, proxyEnvAt(listen)...)
}
