package plan

import (
	"strings"

	"github.com/boxsh/boxsh/frame"
)

// ProxyListen is where commands in an allowlist sandbox reach the
// network proxy: boxsh-init's forwarder on the sandbox's loopback.
const ProxyListen = frame.ProxyListen

// ProxyFD is the descriptor of the proxy socket in boxsh-init, after the
// frame socket (or, in shell mode, the lifeline pipe) at descriptor 3.
const ProxyFD = frame.ProxyFD

// ProxyEnv are the variables that point commands (curl, git, npm, pip,
// go) at the proxy.
func ProxyEnv() []string { return ProxyEnvAt(ProxyListen) }

// ProxyEnvAt are the variables that point commands at the proxy on
// listen ("127.0.0.1:PORT"): the macOS front's, on the host's loopback.
func ProxyEnvAt(listen string) []string {
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

// WithProxyEnv is env with ProxyEnv replacing any proxy variables.
func WithProxyEnv(env []string) []string { return WithProxyEnvAt(env, ProxyListen) }

// WithProxyEnvAt is env with ProxyEnvAt(listen) replacing any proxy
// variables.
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
	return append(out, ProxyEnvAt(listen)...)
}
