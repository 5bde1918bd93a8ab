package proxy

import (
	"fmt"
	"net"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
)

// ReadMethods are the methods of the "read" shorthand of a request rule.
var ReadMethods = []string{"GET", "HEAD", "OPTIONS"}

// RequestRules allow requests to some hosts by method and path: a host
// that a rule names gets only the requests some rule of it allows.
type RequestRules struct {
	rules []requestRule
}

// requestRule is one rule: methods, a host pattern, a path prefix.
type requestRule struct {
	text    string
	methods []string // nil: any
	host    pattern
	prefix  string
}

// NewRequestRules parses rules of the form "METHODS URL": METHODS is
// "GET,HEAD" (any methods, comma-separated), "read" (GET, HEAD and
// OPTIONS) or "*"; URL is "https://HOST[:PORT]/PATH-PREFIX" (or http://),
// HOST a name or "*.example.com".
func NewRequestRules(texts []string) (*RequestRules, error) {
	r := &RequestRules{}
	for _, text := range texts {
		rule, err := parseRequestRule(text)
		if err != nil {
			return nil, fmt.Errorf("request rule %q: %w", text, err)
		}
		r.rules = append(r.rules, rule)
	}
	return r, nil
}

func parseRequestRule(text string) (requestRule, error) {
	methods, rawURL, ok := strings.Cut(strings.TrimSpace(text), " ")
	rawURL = strings.TrimSpace(rawURL)
	if !ok || methods == "" || rawURL == "" {
		return requestRule{}, fmt.Errorf("expected METHODS URL, such as \"GET,HEAD https://api.github.com/repos/acme/\"")
	}
	rule := requestRule{text: text}
	switch methods {
	case "*":
	case "read":
		rule.methods = ReadMethods
	default:
		for m := range strings.SplitSeq(methods, ",") {
			if m == "" || strings.ToUpper(m) != m || strings.ContainsFunc(m, func(r rune) bool { return r < 'A' || r > 'Z' }) {
				return requestRule{}, fmt.Errorf("method %q: expected an upper-case method such as GET, or read or *", m)
			}
			rule.methods = append(rule.methods, m)
		}
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return requestRule{}, fmt.Errorf("URL %q: expected https://HOST/PATH or http://HOST/PATH", rawURL)
	}
	hostPort, prefix, _ := strings.Cut(rest, "/")
	rule.prefix = "/" + prefix
	if strings.ContainsAny(rule.prefix, "?#%") || path.Clean(rule.prefix) != strings.TrimSuffix(rule.prefix, "/") && rule.prefix != "/" {
		return requestRule{}, fmt.Errorf("path %q: expected a clean path prefix, without a query, escapes or dot segments", rule.prefix)
	}
	p, err := parsePattern(hostPort, true)
	if err != nil {
		return requestRule{}, err
	}
	rule.host = p
	return rule, nil
}

// defaultPort is the port of a scheme.
func defaultPort(scheme string) int {
	if scheme == "http" {
		return 80
	}
	return 443
}

// names reports whether the rule is for host and port: any port, unless
// its URL names one, and whatever the scheme, so that plain HTTP cannot go
// around a rule written for HTTPS.
func (r *requestRule) names(host string, port int) bool {
	ip, _ := netip.ParseAddr(host)
	return r.host.match(host, ip, port)
}

// has reports whether a rule names host and port: its requests are then
// decided by the rules (and over TLS, the proxy must see them).
func (r *RequestRules) has(host string, port int) bool {
	if r == nil {
		return false
	}
	for i := range r.rules {
		if r.rules[i].names(host, port) {
			return true
		}
	}
	return false
}

// of are the texts of the rules that name host and port.
func (r *RequestRules) of(host string, port int) []string {
	var texts []string
	for i := range r.rules {
		if r.rules[i].names(host, port) {
			texts = append(texts, r.rules[i].text)
		}
	}
	return texts
}

// A RequestRefusal is a request the request rules of its host refuse.
type RequestRefusal struct {
	Method, Path string
	// Rules are the rules of the host, none of which allows the request.
	Rules []string
}

func (e *RequestRefusal) Error() string {
	return fmt.Sprintf("%s %s is not allowed by the host's request rules (%s)", e.Method, e.Path, strings.Join(e.Rules, "; "))
}

// Check returns nil if the request rules let method reach urlPath (the
// decoded path) on host and port, or say nothing of them.
func (r *RequestRules) Check(host string, port int, method, urlPath string) *RequestRefusal {
	if r == nil {
		return nil
	}
	clean := path.Clean("/" + urlPath)
	if strings.HasSuffix(urlPath, "/") && clean != "/" {
		clean += "/"
	}
	var of []string
	for i := range r.rules {
		rule := &r.rules[i]
		if !rule.names(host, port) {
			continue
		}
		of = append(of, rule.text)
		if rule.methods != nil && !slices.Contains(rule.methods, method) {
			continue
		}
		// A prefix is whole segments: /repos/acme is not /repos/acmeevil.
		if p := strings.TrimSuffix(rule.prefix, "/"); p == "" || clean == p || strings.HasPrefix(clean, p+"/") {
			return nil
		}
	}
	if of == nil {
		return nil
	}
	return &RequestRefusal{Method: method, Path: clean, Rules: of}
}

// requestAllow is the setting that would allow a refused request.
func requestAllow(scheme, host string, port int, e *RequestRefusal) string {
	u := scheme + "://" + host
	if port != defaultPort(scheme) {
		u = scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port))
	}
	return fmt.Sprintf("--allow-request '%s %s%s'", e.Method, u, e.Path)
}
