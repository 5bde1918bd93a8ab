package proxy

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// A Secret is a credential the proxy puts in requests at egress, so that
// the sandbox holds only a stand-in for it.
type Secret struct {
	// Name names the secret in messages and the audit log (the
	// environment variable it came from).
	Name string
	// Value is the credential, never given to the sandbox.
	Value string
	// StandIn is what the sandbox holds in Value's place (see NewStandIn).
	StandIn string
	// Hosts are the patterns of the hosts the secret is for, as Rules
	// takes them ("api.example.com", "*.example.com", with an optional
	// ":port").
	Hosts []string
	// Headers are the request headers in which the stand-in is replaced,
	// besides Authorization (and Basic credentials in a URL's userinfo).
	Headers []string
}

// MinSecretChars is the fewest letters and digits a secret's value needs
// for its stand-in to be told apart from other text.
const MinSecretChars = 12

// NewStandIn returns a random stand-in of the same shape as value: the
// same length, a leading prefix such as "ghp_" or "sk-ant-api03-" kept,
// and each letter or digit after it replaced by a random one of its kind.
func NewStandIn(value string) (string, error) {
	b := []byte(value)
	start := standInPrefix(b)
	n := 0
	for _, c := range b[start:] {
		if kind(c) != "" {
			n++
		}
	}
	if n < MinSecretChars {
		return "", fmt.Errorf("the value has %d letters or digits after its prefix, fewer than the %d its stand-in needs to be told apart", n, MinSecretChars)
	}
	for {
		out := append([]byte(nil), b...)
		for i := start; i < len(out); i++ {
			k := kind(out[i])
			if k == "" {
				continue
			}
			j, err := rand.Int(rand.Reader, big.NewInt(int64(len(k))))
			if err != nil {
				return "", err
			}
			out[i] = k[j.Int64()]
		}
		if s := string(out); s != value && !strings.Contains(value, s) {
			return s, nil
		}
	}
}

// standInPrefix is the length of value's leading prefix that a stand-in
// keeps: lower-case letters, digits, '_' and '-', ending in '_' or '-',
// at most 16 bytes.
func standInPrefix(b []byte) int {
	end := 0
	for i, c := range b[:min(len(b), 16)] {
		switch {
		case c == '_' || c == '-':
			end = i + 1
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		default:
			return end
		}
	}
	return end
}

// kind is the set of characters c is drawn from in a stand-in, or "" if
// c is kept.
func kind(c byte) string {
	switch {
	case c >= 'a' && c <= 'z':
		return "abcdefghijklmnopqrstuvwxyz"
	case c >= 'A' && c <= 'Z':
		return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	case c >= '0' && c <= '9':
		return "0123456789"
	}
	return ""
}

// Secrets are the secrets of one proxy.
type Secrets struct {
	// CA, when set, is the CA of the certificates the proxy shows where
	// it terminates TLS to put the secrets in HTTPS requests: to the
	// hosts a secret is for. Without it, their tunnels are passed
	// through as any other.
	CA *CA
	// Roots verify the servers behind the terminated tunnels (nil: the
	// host's roots).
	Roots *x509.CertPool

	list []secret
}

// secret is a Secret with its host patterns parsed.
type secret struct {
	Secret
	hosts   []pattern
	headers []string
}

// NewSecrets checks list and returns the proxy's secrets.
func NewSecrets(list []Secret) (*Secrets, error) {
	s := &Secrets{}
	for _, sec := range list {
		switch {
		case sec.Name == "":
			return nil, errors.New("a secret needs a name")
		case sec.Value == "":
			return nil, fmt.Errorf("secret %s: the value is empty", sec.Name)
		case len(sec.StandIn) != len(sec.Value) || sec.StandIn == sec.Value:
			return nil, fmt.Errorf("secret %s: the stand-in must differ from the value and have its length", sec.Name)
		case len(sec.Hosts) == 0:
			return nil, fmt.Errorf("secret %s: name the hosts it is for", sec.Name)
		}
		for _, o := range s.list {
			if strings.Contains(o.StandIn, sec.StandIn) || strings.Contains(sec.StandIn, o.StandIn) {
				return nil, fmt.Errorf("secrets %s and %s: one's stand-in holds the other's", o.Name, sec.Name)
			}
		}
		c := secret{Secret: sec, headers: []string{"Authorization"}}
		for _, h := range sec.Hosts {
			p, err := parsePattern(h, true)
			if err != nil {
				return nil, fmt.Errorf("secret %s: host %w", sec.Name, err)
			}
			c.hosts = append(c.hosts, p)
		}
		for _, h := range sec.Headers {
			c.headers = append(c.headers, http.CanonicalHeaderKey(h))
		}
		s.list = append(s.list, c)
	}
	return s, nil
}

// isFor reports whether the secret is for host and port.
func (s *secret) isFor(host string, port int) bool {
	ip, _ := netip.ParseAddr(host)
	for i := range s.hosts {
		if s.hosts[i].match(host, ip, port) {
			return true
		}
	}
	return false
}

// A Leak is a stand-in found in a request to a host its secret is not for.
type Leak struct {
	// Secret names the secret.
	Secret string
	// Hosts are the hosts it is for.
	Hosts []string
	// Echo, when set, is the method of a request to one of those hosts
	// that a server answers with the request itself (see PutRequest).
	Echo string
}

func (l *Leak) Error() string {
	if l.Echo != "" {
		return fmt.Sprintf("the request carries the stand-in of secret %s, and a %s request is answered with itself, so the proxy puts no secret in one", l.Secret, l.Echo)
	}
	return fmt.Sprintf("the request carries the stand-in of secret %s, which is only for %s", l.Secret, strings.Join(l.Hosts, ", "))
}

// PutRequest is Put for a request of method. A TRACE (or TRACK) request,
// which a server answers with the request itself, credentials included,
// gets no secret: one that would is a *Leak.
func (s *Secrets) PutRequest(method, host string, port int, h http.Header, u *url.URL) (used []string, leak *Leak) {
	if s != nil && (strings.EqualFold(method, "TRACE") || strings.EqualFold(method, "TRACK")) {
		for i := range s.list {
			if sec := &s.list[i]; sec.isFor(host, port) && sec.in(h, u) {
				return nil, &Leak{Secret: sec.Name, Hosts: sec.Hosts, Echo: strings.ToUpper(method)}
			}
		}
	}
	return s.Put(host, port, h, u)
}

// Put puts the secrets for host and port in place of their stand-ins in a
// request's header h and URL u, and returns the names of those it used.
//
// A stand-in is replaced only in the Authorization header (a Basic
// credential decoded), the secret's own headers and the URL's userinfo
// (moved to an Authorization header). Elsewhere it is left as it is, so
// that no answer can echo the value back. A stand-in anywhere in a request
// to a host its secret is not for is a *Leak.
func (s *Secrets) Put(host string, port int, h http.Header, u *url.URL) (used []string, leak *Leak) {
	if s == nil || len(s.list) == 0 {
		return nil, nil
	}
	for i := range s.list {
		sec := &s.list[i]
		if !sec.isFor(host, port) {
			if sec.in(h, u) {
				return nil, &Leak{Secret: sec.Name, Hosts: sec.Hosts}
			}
			continue
		}
		if sec.put(h, u) {
			used = append(used, sec.Name)
		}
	}
	return used, nil
}

// put replaces the stand-in in the places it may be replaced, and
// reports whether it did.
func (s *secret) put(h http.Header, u *url.URL) bool {
	did := false
	if u.User != nil {
		name := u.User.Username()
		pass, _ := u.User.Password()
		if strings.Contains(name, s.StandIn) || strings.Contains(pass, s.StandIn) {
			if h.Get("Authorization") == "" {
				h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(name+":"+pass)))
			}
			u.User = nil
		}
	}
	for _, name := range s.headers {
		vs := h[name]
		for i, v := range vs {
			if nv, ok := s.replace(name, v); ok {
				vs[i] = nv
				did = true
			}
		}
	}
	return did
}

// replace puts the value in place of the stand-in in header value v.
func (s *secret) replace(header, v string) (string, bool) {
	if strings.Contains(v, s.StandIn) {
		return strings.ReplaceAll(v, s.StandIn, s.Value), true
	}
	if header != "Authorization" {
		return v, false
	}
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return v, false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil || !strings.Contains(string(raw), s.StandIn) {
		return v, false
	}
	return scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(string(raw), s.StandIn, s.Value))), true
}

// in reports whether the stand-in is anywhere in the request's header or
// URL, a Basic credential decoded; in a header's name, in any case.
func (s *secret) in(h http.Header, u *url.URL) bool {
	if strings.Contains(u.String(), s.StandIn) || strings.Contains(u.Path, s.StandIn) {
		return true
	}
	if q, err := url.QueryUnescape(u.RawQuery); err == nil && strings.Contains(q, s.StandIn) {
		return true
	}
	for name, vs := range h {
		for _, v := range vs {
			// A name comes canonicalized, its letters' case changed.
			if strings.Contains(strings.ToLower(name), strings.ToLower(s.StandIn)) || strings.Contains(v, s.StandIn) {
				return true
			}
			if _, ok := s.replace("Authorization", strings.TrimSpace(v)); ok {
				return true // a Basic credential that holds it
			}
		}
	}
	return false
}
