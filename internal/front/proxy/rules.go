package proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Rules decide which destinations are allowed.
type Rules struct {
	allowed []pattern
	denied  []pattern
}

// A pattern is one compiled rule.
type pattern struct {
	text     string     // as written, to name the rule that decided
	name     string     // exact host name, or the domain under a wildcard
	wildcard bool       // name is the domain under "*."
	ip       netip.Addr // valid for an IP pattern
	port     int        // 0: any port
}

// NewRules validates and compiles allowed and denied domain patterns.
//
// A pattern is one of:
//
//   - an exact host name ("registry.npmjs.org");
//   - "*.example.com" for any subdomain, not example.com itself;
//   - an IP address, for exactly that address: "127.0.0.1", "127.0.0.1:8080",
//     "::1", "[::1]" or "[::1]:8080".
//
// A name may have ":port", for only that port; without it, any port matches.
// Host names are compared case-insensitively, and a trailing dot is ignored.
//
// An allowed pattern that would open a whole public suffix ("*.com",
// "*.co.uk", "*.github.io", or any single label such as "*.internal") is
// refused as too broad; a denied one may ("*.ru"). Both lists refuse "*", "*."
// and malformed patterns:
//
//   - empty, or with spaces or other characters not valid in a host name;
//   - with "*" other than as the whole first label;
//   - with a port that is not a number from 1 to 65535.
//
// The error names the pattern.
func NewRules(allowed, denied []string) (*Rules, error) {
	r := &Rules{}
	for _, s := range allowed {
		p, err := parsePattern(s, true)
		if err != nil {
			return nil, fmt.Errorf("allowed domain %q: %w", s, err)
		}
		r.allowed = append(r.allowed, p)
	}
	for _, s := range denied {
		p, err := parsePattern(s, false)
		if err != nil {
			return nil, fmt.Errorf("denied domain %q: %w", s, err)
		}
		r.denied = append(r.denied, p)
	}
	return r, nil
}

// parsePattern compiles s; for an allowed pattern, it refuses a wildcard
// over a public suffix.
func parsePattern(s string, allow bool) (pattern, error) {
	p := pattern{text: s}
	if s == "" {
		return p, errors.New("empty pattern")
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }); i >= 0 {
		if s[i] >= 0x80 {
			return p, errors.New("not ASCII: write an international name in its xn-- form")
		}
		return p, errors.New("spaces or control characters")
	}
	if ip, err := netip.ParseAddr(s); err == nil && ip.Is6() {
		// An IPv6 address without brackets or port: "::1".
		return ipPattern(p, ip)
	}
	host, port, err := splitPattern(s)
	if err != nil {
		return p, err
	}
	p.port = port
	if ip, err := netip.ParseAddr(host); err == nil {
		if strings.HasPrefix(s, "[") != ip.Is6() {
			return p, errors.New("an IPv6 address goes in brackets, an IPv4 one not")
		}
		return ipPattern(p, ip)
	}
	if strings.HasPrefix(s, "[") {
		return p, errors.New("expected an IPv6 address in the brackets")
	}
	host = normalizeName(host)
	switch {
	case host == "*" || host == "*.":
		return p, errors.New("too broad: it would allow every domain (name the domains, or *.example.com for the subdomains of one)")
	case strings.HasPrefix(host, "*."):
		p.wildcard = true
		host = host[2:]
	}
	if strings.Contains(host, "*") {
		return p, errors.New(`"*" is allowed only as the whole first label, as in *.example.com`)
	}
	if err := checkName(host); err != nil {
		return p, err
	}
	if numeric(host) {
		return p, errors.New("a numeric name: write an IP address in its usual form (127.0.0.1)")
	}
	if p.wildcard && allow {
		if suffix, _ := publicsuffix.PublicSuffix(host); suffix == host {
			return p, fmt.Errorf("too broad: %q is a public suffix, shared by unrelated owners (name the domains under it instead)", host)
		}
	}
	p.name = host
	return p, nil
}

func ipPattern(p pattern, ip netip.Addr) (pattern, error) {
	if ip.Zone() != "" {
		return p, errors.New("an IPv6 zone is not allowed")
	}
	p.ip = ip.Unmap()
	return p, nil
}

// splitPattern splits host[:port] or [host][:port]; port is 0 when absent.
func splitPattern(s string) (host string, port int, err error) {
	var portText string
	hasPort := false
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, errors.New(`missing "]"`)
		}
		host, rest := s[1:end], s[end+1:]
		if rest != "" {
			if rest[0] != ':' {
				return "", 0, errors.New(`expected ":port" after "]"`)
			}
			portText, hasPort = rest[1:], true
		}
		s = host
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		s, portText, hasPort = s[:i], s[i+1:], true
	}
	if s == "" {
		return "", 0, errors.New("no host")
	}
	if hasPort {
		if port, err = parsePort(portText); err != nil {
			return "", 0, err
		}
	}
	return s, port, nil
}

// parsePort parses a decimal port from 1 to 65535.
func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("bad port %q: expected a number from 1 to 65535", s)
	}
	n, _ := strconv.Atoi(s)
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("bad port %q: expected a number from 1 to 65535", s)
	}
	return n, nil
}

// normalizeName lower-cases name and drops one trailing dot.
func normalizeName(name string) string {
	return strings.TrimSuffix(strings.ToLower(name), ".")
}

// maxNameLen is the length of the longest host name.
const maxNameLen = 253

// checkName checks that name is a host name: dot-separated labels of
// letters, digits, '-' and '_', 1 to 63 bytes each, at most 253 in all.
func checkName(name string) error {
	if name == "" {
		return errors.New("no host")
	}
	if len(name) > maxNameLen {
		return errors.New("host name longer than 253 bytes")
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" {
			return errors.New("empty label in host name")
		}
		if len(label) > 63 {
			return errors.New("label longer than 63 bytes in host name")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("%q is not allowed in a host name", c)
			}
		}
	}
	return nil
}

// numeric reports whether every label of name is a number: decimal, octal or
// 0x-hexadecimal.
//
// Some resolvers take a form such as "127.1" or "0x7f000001" for an IP
// address, so it must not pass as a name.
func numeric(name string) bool {
	for label := range strings.SplitSeq(name, ".") {
		var digits string
		if strings.HasPrefix(label, "0x") {
			digits = strings.TrimLeft(label[2:], "0123456789abcdef")
		} else {
			digits = strings.TrimLeft(label, "0123456789")
		}
		if digits != "" || label == "" {
			return false
		}
	}
	return true
}

func (p *pattern) match(host string, ip netip.Addr, port int) bool {
	if p.port != 0 && p.port != port {
		return false
	}
	switch {
	case p.ip.IsValid():
		return ip == p.ip
	case ip.IsValid():
		return false
	case p.wildcard:
		return len(host) > len(p.name)+1 && strings.HasSuffix(host, p.name) && host[len(host)-len(p.name)-1] == '.'
	default:
		return host == p.name
	}
}

// A decision is what Rules decided, and why.
type decision struct {
	host    string // normalized: lower case, no trailing dot, no brackets; quoted if invalid
	port    int
	allowed bool
	rule    string // the pattern that decided, or ""
	denied  bool   // a denied pattern matched
	ip      bool   // host is an IP address (or looks like one)
	invalid bool   // host is not a host name
	// userDenied and unanswered tell how a question about it ended (see
	// Server.Ask).
	userDenied, unanswered bool
	// answered tells that an answer allowed it, not a rule.
	answered bool
	// secrets are the secrets put in the request; leak refused it for
	// carrying a stand-in to a host its secret is not for.
	secrets []string
	leak    *Leak
	// request refused the request by its method and path; scheme is the
	// request's.
	request *RequestRefusal
	scheme  string
}

// Decide says whether host:port may be reached, and the rule that decided.
//
// The rule is the denied or allowed pattern as written, or "" when none
// matched; then the destination is refused. Denied patterns win over allowed
// ones. A host that is an IP address is refused unless an IP pattern allows it
// exactly. A nil *Rules refuses everything.
func (r *Rules) Decide(host string, port int) (allowed bool, rule string) {
	d := r.decide(host, port)
	return d.allowed, d.rule
}

func (r *Rules) decide(host string, port int) decision {
	d := decision{port: port}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	ip, err := netip.ParseAddr(host)
	if err == nil {
		ip = ip.Unmap()
		d.host, d.ip = ip.String(), true
	} else {
		d.host = normalizeName(host)
		switch {
		case checkName(d.host) != nil:
			// Quoted, and cut short: it goes into logs and replies.
			if len(host) > maxNameLen {
				host = host[:maxNameLen] + "..."
			}
			d.host, d.invalid = strconv.QuoteToASCII(host), true
			return d
		case numeric(d.host):
			d.ip = true
			return d
		}
	}
	if r == nil || port < 1 || port > 65535 {
		return d
	}
	for i := range r.denied {
		if p := &r.denied[i]; p.match(d.host, ip, port) {
			d.rule, d.denied = p.text, true
			return d
		}
	}
	for i := range r.allowed {
		if p := &r.allowed[i]; p.match(d.host, ip, port) {
			d.rule, d.allowed = p.text, true
			return d
		}
	}
	return d
}
