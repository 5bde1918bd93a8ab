package proxy

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func refused(host string, port int) Decision {
	return Decision{Host: host, Port: port, Protocol: "connect", Reason: "not in the allowlist", Allow: "--allow-domain " + host}
}

// Allowed decisions are not refusals; each refusal takes the next number.
func TestRefusalsSequence(t *testing.T) {
	r := NewRefusals(0)
	assert.Equal(t, uint64(0), r.Seq())
	r.Record(Decision{Host: "ok.example", Port: 443, Allowed: true})
	assert.Equal(t, uint64(0), r.Seq(), "an allowed decision is no refusal")
	r.Record(refused("a.example", 443))
	start := r.Seq()
	r.Record(refused("b.example", 80))
	r.Record(refused("c.example", 443))
	refs, latest, dropped := r.Since(start)
	assert.Equal(t, uint64(3), latest)
	assert.False(t, dropped)
	require.Len(t, refs, 2)
	assert.Equal(t, Refusal{Host: "b.example", Port: 80, Reason: "not in the allowlist", Allow: "--allow-domain b.example", Count: 1, Seq: 2}, refs[0])
	assert.Equal(t, "c.example", refs[1].Host)
	refs, _, _ = r.Since(latest)
	assert.Empty(t, refs, "nothing after the latest")
}

// The same host, port and reason are kept once, counted, with the number
// of the latest; another port or reason is another refusal.
func TestRefusalsDedup(t *testing.T) {
	r := NewRefusals(0)
	r.Record(refused("a.example", 443))
	r.Record(refused("b.example", 443))
	start := r.Seq()
	r.Record(refused("a.example", 443))
	r.Record(refused("a.example", 443))
	r.Record(refused("a.example", 80))
	other := refused("a.example", 443)
	other.Reason = "refused by the denied domain \"a.example\""
	r.Record(other)
	refs, _, _ := r.Since(start)
	require.Len(t, refs, 3)
	assert.Equal(t, 3, refs[0].Count, "counted since first kept")
	assert.Equal(t, uint64(4), refs[0].Seq, "the number of the latest")
	assert.Equal(t, 80, refs[1].Port)
	assert.Equal(t, other.Reason, refs[2].Reason)
	all := r.Recent(0)
	require.Len(t, all, 4)
	assert.Equal(t, "b.example", all[0].Host, "oldest first")
}

// Beyond its bound the oldest refusal is dropped, and Since says so.
func TestRefusalsBound(t *testing.T) {
	r := NewRefusals(3)
	for i := range 5 {
		r.Record(refused(fmt.Sprintf("h%d.example", i), 443))
	}
	all := r.Recent(0)
	require.Len(t, all, 3)
	assert.Equal(t, []string{"h2.example", "h3.example", "h4.example"}, []string{all[0].Host, all[1].Host, all[2].Host})
	_, _, dropped := r.Since(0)
	assert.True(t, dropped, "h0 and h1 were dropped")
	refs, _, dropped := r.Since(2)
	assert.False(t, dropped, "nothing after 2 was dropped")
	assert.Len(t, refs, 3)
	// A refusal recorded again is new: h2 now outlives h3.
	r.Record(refused("h2.example", 443))
	r.Record(refused("h5.example", 443))
	all = r.Recent(2)
	assert.Equal(t, []string{"h2.example", "h5.example"}, []string{all[0].Host, all[1].Host})
	assert.Equal(t, []string{"h4.example", "h2.example", "h5.example"}, hosts(r.Recent(0)))
}

func hosts(refs []Refusal) []string {
	var hs []string
	for _, r := range refs {
		hs = append(hs, r.Host)
	}
	return hs
}

// A refusal's reason and setting follow the rule that decided, and name
// where a denied pattern was set.
func TestExplain(t *testing.T) {
	rules, err := NewRules([]string{"*.example.com"}, []string{"ads.example.com"})
	require.NoError(t, err)
	srv := (&Server{Rules: rules, RuleSource: func(rule string) string { return "/p/settings.json (" + rule + ")" }}).withDefaults()
	for _, c := range []struct{ host, reason, allow string }{
		{"other.org", "not in the allowlist", "--allow-domain other.org"},
		{"ads.example.com", `refused by the denied domain "ads.example.com"`, `remove "ads.example.com" from network.deniedDomains in /p/settings.json (ads.example.com)`},
		{"10.0.0.1", "an IP address is allowed only when named exactly", "--allow-domain 10.0.0.1"},
		{"::1", "an IP address is allowed only when named exactly", "--allow-domain [::1]"},
		{"bad host", "not a valid host name", ""},
	} {
		var got Decision
		srv.Decided = func(d Decision) { got = d }
		srv.decide(context.Background(), nil, c.host, 443, "connect")
		assert.False(t, got.Allowed, c.host)
		assert.Equal(t, c.reason, got.Reason, c.host)
		assert.Equal(t, c.allow, got.Allow, c.host)
	}
	var got Decision
	srv.Decided = func(d Decision) { got = d }
	srv.decide(context.Background(), nil, "www.example.com", 443, "connect")
	assert.Equal(t, Decision{Host: "www.example.com", Port: 443, Protocol: "connect", Allowed: true, Rule: "*.example.com"}, got, "an allowed one has no reason")
}
