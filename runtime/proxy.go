package runtime

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/proxy"
)

// ProxyListen is where commands in an allowlist sandbox reach the
// network proxy: boxsh-init's forwarder on the sandbox's loopback.
const ProxyListen = "127.0.0.1:3128"

// ProxyFD is the descriptor of the proxy socket in boxsh-init, after the
// frame socket (or, in shell mode, the lifeline pipe) at InitFD.
const ProxyFD = InitFD + 1

// ProxyEnv are the variables that point commands (curl, git, npm, pip,
// go) at the proxy.
func ProxyEnv() []string {
	httpURL, socksURL := "http://"+ProxyListen, "socks5h://"+ProxyListen
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
func WithProxyEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
			continue
		}
		out = append(out, kv)
	}
	return append(out, ProxyEnv()...)
}

// ProxyHostsVar names the variable that maps host names to addresses for
// the proxy's upstream connections ("name=host:port,..."): for tests,
// whose stand-ins for the outside world listen on the loopback.
const ProxyHostsVar = "BOXSH_PROXY_HOSTS"

// NewProxy is the network proxy of policy p, logging its decisions to
// log.
func NewProxy(p policy.Policy, log hclog.Logger) (*proxy.Server, error) {
	rules, err := proxy.NewRules(policy.Values(p.AllowedDomains), policy.Values(p.DeniedDomains))
	if err != nil {
		return nil, fmt.Errorf("network policy: %w", err)
	}
	s := &proxy.Server{Rules: rules, Log: log}
	outside := &net.Dialer{Timeout: 10 * time.Second, Control: refuseHostLocal}
	s.Dial = outside.DialContext
	if hosts := os.Getenv(ProxyHostsVar); hosts != "" {
		m := map[string]string{}
		for entry := range strings.SplitSeq(hosts, ",") {
			if name, addr, ok := strings.Cut(entry, "="); ok {
				m[name] = addr
			}
		}
		var d net.Dialer
		s.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := m[addr]; ok {
				addr = to
			} else if host, port, err := net.SplitHostPort(addr); err == nil {
				if to, ok := m[host]; ok {
					if _, _, err := net.SplitHostPort(to); err == nil {
						addr = to // a name mapped to host:port
					} else {
						addr = net.JoinHostPort(to, port)
					}
				}
			}
			return d.DialContext(ctx, network, addr)
		}
	}
	return s, nil
}

// serveProxy serves the yamux streams on conn (boxsh-init's forwarder
// opens one per connection) with s until ctx ends or conn closes.
func serveProxy(ctx context.Context, s *proxy.Server, conn net.Conn) {
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	session, err := yamux.Server(conn, cfg)
	if err != nil {
		conn.Close()
		return
	}
	go func() {
		<-ctx.Done()
		session.Close()
	}()
	_ = s.Serve(ctx, session)
	session.Close()
}

// StartProxy starts the network proxy of policy p for a sandbox: it
// returns the sandbox's end of the proxy socket (for boxsh-init, which
// closes it in the parent once started), and the function that stops the
// proxy.
func StartProxy(p policy.Policy, log hclog.Logger) (child *os.File, stop func(), err error) {
	px, err := NewProxy(p, log)
	if err != nil {
		return nil, nil, err
	}
	parent, child, err := socketPair()
	if err != nil {
		return nil, nil, err
	}
	conn, err := net.FileConn(parent)
	parent.Close()
	if err != nil {
		child.Close()
		return nil, nil, fmt.Errorf("proxy socket: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { serveProxy(ctx, px, conn); close(done) }()
	return child, func() { cancel(); conn.Close(); <-done }, nil
}

// ProxyArgs are boxsh-init's arguments that expose the proxy on the
// descriptor fd.
func ProxyArgs(fd int) []string {
	return []string{"--proxy-fd", strconv.Itoa(fd), "--proxy-listen", ProxyListen}
}

// refuseHostLocal refuses upstream connections to the host's own
// addresses (loopback, link-local such as a cloud's metadata service,
// unspecified, multicast): the proxy runs outside the sandbox, and an
// allowed name that resolves to one must not reach the host's services.
func refuseHostLocal(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() {
		return fmt.Errorf("refusing to connect to %s: an address of the host itself", ip)
	}
	return nil
}
