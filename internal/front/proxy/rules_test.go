package proxy

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewRulesValid(t *testing.T) {
	for _, p := range []string{
		"registry.npmjs.org",
		"Registry.NPMJS.org.",
		"*.example.com",
		"git.example.com:8443",
		"*.example.com:443",
		"localhost",
		"_service.example.com",
		"127.0.0.1",
		"127.0.0.1:8080",
		"::1",
		"[::1]",
		"[::1]:8080",
		"*.example.co.uk",
		"foo.github.io",
	} {
		_, err := NewRules([]string{p}, []string{p})
		assert.NoError(t, err, "pattern %q", p)
	}
}

func TestNewRulesRefused(t *testing.T) {
	for _, tc := range []struct{ pattern, why string }{
		{"*", "too broad"},
		{"*.", "too broad"},
		{"*:443", "too broad"},
		{"*.com", "public suffix"},
		{"*.COM.", "public suffix"},
		{"*.co.uk", "public suffix"},
		{"*.github.io", "public suffix"},
		{"*.githubusercontent.com", "public suffix"},
		{"*.internal", "public suffix"},
		{"a.*.com", "first label"},
		{"*foo.com", "first label"},
		{"*.*.example.com", "first label"},
		{"example.com:0", "bad port"},
		{"example.com:65536", "bad port"},
		{"example.com:http", "bad port"},
		{"example.com:", "bad port"},
		{"example.com:-1", "bad port"},
		{":443", "no host"},
		{"", "empty"},
		{" example.com", "spaces"},
		{"exa mple.com", "spaces"},
		{"example.com\n", "spaces"},
		{"example..com", "empty label"},
		{"exa/mple.com", "not allowed in a host name"},
		{"bücher.de", "xn--"},
		{"127.1", "numeric"},
		{"0x7f000001", "numeric"},
		{"[::1", `missing "]"`},
		{"[::1]8080", `":port"`},
		{"[127.0.0.1]", "brackets"},
		{"[example.com]:80", "IPv6 address"},
		{"fe80::1%eth0", "zone"},
	} {
		_, err := NewRules([]string{tc.pattern}, nil)
		if assert.Error(t, err, "allowed pattern %q", tc.pattern) {
			assert.Contains(t, err.Error(), `allowed domain "`+escape(tc.pattern)+`"`, "the error names the pattern")
			assert.Contains(t, err.Error(), tc.why)
		}
	}
	// Denying a whole public suffix is fine, denying everything is not a pattern.
	_, err := NewRules(nil, []string{"*.ru", "*.co.uk"})
	assert.NoError(t, err)
	_, err = NewRules(nil, []string{"ok.example.com", "*"})
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), `denied domain "*"`)
	}
}

// escape is how %q writes s, without the quotes.
func escape(s string) string {
	q := []rune(strconv.Quote(s))
	return string(q[1 : len(q)-1])
}

func TestDecide(t *testing.T) {
	r, err := NewRules(
		[]string{"registry.npmjs.org", "*.github.com", "git.example.com:8443", "Upper.Example.Com.", "*.example.com", "127.0.0.1:9000", "[::1]", "10.0.0.1"},
		[]string{"*.ads.example.com", "tracker.github.com", "git.example.com:22"},
	)
	require.NoError(t, err)
	for _, tc := range []struct {
		host    string
		port    int
		allowed bool
		rule    string
	}{
		{"registry.npmjs.org", 443, true, "registry.npmjs.org"},
		{"registry.npmjs.org", 80, true, "registry.npmjs.org"},
		{"REGISTRY.npmjs.ORG.", 443, true, "registry.npmjs.org"},
		{"npmjs.org", 443, false, ""},
		{"evil-registry.npmjs.org", 443, false, ""},
		{"registry.npmjs.org.evil.com", 443, false, ""},
		// A wildcard covers subdomains at any depth, not the domain itself.
		{"api.github.com", 443, true, "*.github.com"},
		{"a.b.github.com", 443, true, "*.github.com"},
		{"github.com", 443, false, ""},
		{"notgithub.com", 443, false, ""},
		// Port rules.
		{"git.example.com", 8443, true, "git.example.com:8443"},
		{"git.example.com", 443, true, "*.example.com"},
		{"upper.example.com", 1, true, "Upper.Example.Com."},
		// Denied wins, whatever the order and specificity.
		{"x.ads.example.com", 443, false, "*.ads.example.com"},
		{"ads.example.com", 443, true, "*.example.com"},
		{"tracker.github.com", 443, false, "tracker.github.com"},
		{"git.example.com", 22, false, "git.example.com:22"},
		// Raw IP addresses: only as allowed exactly.
		{"127.0.0.1", 9000, true, "127.0.0.1:9000"},
		{"127.0.0.1", 9001, false, ""},
		{"127.0.0.2", 9000, false, ""},
		{"::ffff:127.0.0.1", 9000, true, "127.0.0.1:9000"},
		{"::1", 80, true, "[::1]"},
		{"[::1]", 443, true, "[::1]"},
		{"10.0.0.1", 22, true, "10.0.0.1"},
		{"93.184.216.34", 443, false, ""},
		{"127.1", 9000, false, ""},
		{"0x7f.0.0.1", 9000, false, ""},
		// Not host names at all.
		{"", 443, false, ""},
		{"a b.example.com", 443, false, ""},
		{"x/.example.com", 443, false, ""},
		{".example.com", 443, false, ""},
		{"registry.npmjs.org", 0, false, ""},
		{"registry.npmjs.org", 70000, false, ""},
	} {
		allowed, rule := r.Decide(tc.host, tc.port)
		assert.Equal(t, tc.allowed, allowed, "%s:%d", tc.host, tc.port)
		assert.Equal(t, tc.rule, rule, "%s:%d", tc.host, tc.port)
	}

	var none *Rules
	allowed, rule := none.Decide("example.com", 443)
	assert.False(t, allowed, "nil Rules refuse")
	assert.Empty(t, rule)
	empty, err := NewRules(nil, nil)
	require.NoError(t, err)
	allowed, _ = empty.Decide("example.com", 443)
	assert.False(t, allowed, "no rules refuse")
}

func TestDecideReasons(t *testing.T) {
	r, err := NewRules([]string{"*.example.com"}, []string{"ads.example.com"})
	require.NoError(t, err)
	d := r.decide("93.184.216.34", 443)
	assert.True(t, d.ip)
	d = r.decide("ads.example.com", 443)
	assert.True(t, d.denied)
	d = r.decide("a b\n", 443)
	assert.True(t, d.invalid)
	assert.Equal(t, `"a b\n"`, d.host, "quoted for logs and replies")
	d = r.decide(strings.Repeat("é", 300), 443)
	assert.True(t, d.invalid)
	assert.Less(t, len(d.host), 2000, "cut short")
	d = r.decide("Www.Example.Com.", 443)
	assert.Equal(t, "www.example.com", d.host, "normalized")
	d = r.decide("[::FFFF:1.2.3.4]", 443)
	assert.Equal(t, "1.2.3.4", d.host, "normalized")
}
