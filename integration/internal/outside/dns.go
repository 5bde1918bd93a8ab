//go:build linux

package outside

import (
	"net"
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// parseNames reads namesEnv's value: fully qualified names to addresses.
func parseNames(v string) map[string]netip.Addr {
	out := map[string]netip.Addr{}
	for entry := range strings.SplitSeq(v, ",") {
		name, a, ok := strings.Cut(entry, "=")
		if !ok {
			continue
		}
		if ip, err := netip.ParseAddr(a); err == nil {
			out[strings.ToLower(strings.TrimSuffix(name, "."))+"."] = ip
		}
	}
	return out
}

// serveDNS answers DNS queries on pc from names until pc is closed: an A or
// AAAA record for a name of the right family, no record for one of the
// other, and NXDOMAIN for any other name.
func serveDNS(pc net.PacketConn, names map[string]netip.Addr) {
	buf := make([]byte, 1500)
	for {
		m, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if reply, ok := answer(buf[:m], names); ok {
			_, _ = pc.WriteTo(reply, from)
		}
	}
}

// answer is the reply to query, or false for a message that is none.
func answer(query []byte, names map[string]netip.Addr) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	ip, known := names[strings.ToLower(q.Name.String())]
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
	switch {
	case known && q.Type == dnsmessage.TypeA && ip.Is4():
		if b.AResource(rr, dnsmessage.AResource{A: ip.As4()}) != nil {
			return nil, false
		}
	case known && q.Type == dnsmessage.TypeAAAA && ip.Is6():
		if b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: ip.As16()}) != nil {
			return nil, false
		}
	}
	reply, err := b.Finish()
	return reply, err == nil
}
