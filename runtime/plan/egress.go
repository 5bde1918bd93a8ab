package plan

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/policy"
)

// resolvConf is the resolver's configuration.
const resolvConf = "/etc/resolv.conf"

// resolvConfContent names boxsh-init's name service, the only one in a
// sandbox under an allowlist network policy.
const resolvConfContent = `# boxsh: names resolve to addresses of the sandbox's own loopback, whose
# connections boxsh-init carries to the network proxy (allowlist policy).
nameserver 127.0.0.1
`

// defaultEgressPorts are the ports captured for every name: those of ssh,
// HTTP and HTTPS, which an allowed pattern without a port opens among the
// others.
var defaultEgressPorts = []uint16{22, 80, 443}

// egressPorts are the ports boxsh-init captures on the addresses of its name
// service under policy p (see initproto.InitOptions.EgressPorts): the
// defaultEgressPorts, and each port an allowed pattern names.
//
// The proxy still decides on each connection; a port here is only one it
// may allow.
func egressPorts(p policy.Policy) []uint16 {
	ports := slices.Clone(defaultEgressPorts)
	for _, pat := range policy.Values(p.AllowedDomains) {
		if port, ok := patternPort(pat); ok && !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	slices.Sort(ports)
	return ports
}

// patternPort is the port a domain pattern names: "host:port" or
// "[v6]:port". A bare IPv6 address names none.
func patternPort(pat string) (uint16, bool) {
	var text string
	switch {
	case strings.HasPrefix(pat, "["):
		_, after, ok := strings.Cut(pat, "]:")
		if !ok {
			return 0, false
		}
		text = after
	case strings.Count(pat, ":") == 1:
		_, text, _ = strings.Cut(pat, ":")
	default:
		return 0, false
	}
	n, err := strconv.ParseUint(text, 10, 16)
	if err != nil || n == 0 {
		return 0, false
	}
	return uint16(n), true
}

// adjustResolvConf points the sandbox's resolver at boxsh-init's name
// service under an allowlist network policy.
//
// The root gets the file at initproto.ResolvConfPath, bound read-only on
// /etc/resolv.conf in place of the host's. With a whole /etc from the host
// (--try), it is bound over the host's file, when the host has one. A printed
// spec keeps the host's: its root is not boxsh's to prepare, and another
// runtime has no proxy to capture for.
func (p *Plan) adjustResolvConf(cfg Config, ann map[string]string) error {
	if !p.Proxy || cfg.Target == TargetPrint {
		return nil
	}
	p.Files = append(p.Files, File{Path: initproto.ResolvConfPath, Content: []byte(resolvConfContent)})
	ann[FileAnnotation+initproto.ResolvConfPath] = resolvConfContent
	m := specs.Mount{Destination: resolvConf, Type: "bind", Source: filepath.Join(cfg.Rootfs, initproto.ResolvConfPath), Options: roBind(false)}
	if i := slices.IndexFunc(p.Spec.Mounts, func(m specs.Mount) bool { return m.Destination == resolvConf }); i >= 0 {
		p.Spec.Mounts[i] = m
		return nil
	}
	if cfg.Sandbox.HostSystem && !hostHasResolvConf(cfg.Host) {
		return nil // no mount point, and none may be made in the host's /etc
	}
	p.Spec.Mounts = append(p.Spec.Mounts, m)
	return nil
}

// hostHasResolvConf tells whether the host has /etc/resolv.conf.
func hostHasResolvConf(host HostFacts) bool { return etcSet(host)[resolvConf] }
