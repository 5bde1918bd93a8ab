package netfwd

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// DNSListen is where the name service of Egress listens, over UDP and TCP:
// the sandbox's /etc/resolv.conf names it.
const DNSListen = "127.0.0.1:53"

const (
	// dnsTTL is the time to live of an answer. The address of a name does
	// not change in a sandbox's life.
	dnsTTL = 300
	// maxDNSConns bounds the TCP connections served at once.
	maxDNSConns = 16
	// dnsIdle closes a TCP connection without a query for this long.
	dnsIdle = 10 * time.Second
)

// ServeDNS serves the name service on pc (UDP) and l (TCP), either may be
// nil, until ctx ends or both fail. It closes both when ctx ends.
func (e *Egress) ServeDNS(ctx context.Context, pc net.PacketConn, l net.Listener) {
	e.init()
	var wg sync.WaitGroup
	if pc != nil {
		context.AfterFunc(ctx, func() { pc.Close() })
		wg.Go(func() { e.serveUDP(pc) })
	}
	if l != nil {
		context.AfterFunc(ctx, func() { l.Close() })
		wg.Go(func() { e.serveTCP(ctx, l) })
	}
	wg.Wait()
}

func (e *Egress) serveUDP(pc net.PacketConn) {
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if reply := e.Answer(buf[:n]); reply != nil {
			_, _ = pc.WriteTo(reply, from)
		}
	}
}

func (e *Egress) serveTCP(ctx context.Context, l net.Listener) {
	slots := make(chan struct{}, maxDNSConns)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return
			}
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			stop := context.AfterFunc(ctx, func() { c.Close() })
			defer stop()
			defer c.Close()
			e.serveTCPConn(c)
		})
	}
}

// serveTCPConn answers the queries on c, each with a two-byte length first
// (RFC 1035, 4.2.2).
func (e *Egress) serveTCPConn(c net.Conn) {
	var size [2]byte
	buf := make([]byte, 65535)
	for {
		_ = c.SetDeadline(time.Now().Add(dnsIdle))
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		q := buf[:binary.BigEndian.Uint16(size[:])]
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		reply := e.Answer(q)
		if reply == nil {
			return
		}
		if _, err := c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(reply)))); err != nil {
			return
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}

// Answer answers the DNS query q, or returns nil for a message it ignores
// (one that is not a query, or is too short to answer).
//
//   - A query must have one question, else it gets FORMERR; a query other
//     than a standard one gets NOTIMP, and one of a class other than IN gets
//     REFUSED.
//   - A name that is not a host name, or is numeric (such as "127.1"), gets
//     NXDOMAIN.
//   - "localhost" and names under it get 127.0.0.1 for A.
//   - Any other name gets its synthetic address for A (see Lookup), or
//     SERVFAIL when it cannot have one.
//   - Every other type (AAAA among them) gets no answer, so that clients use
//     IPv4: the synthetic addresses are IPv4 only.
func (e *Egress) Answer(q []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil || h.Response {
		return nil
	}
	qs, err := p.AllQuestions()
	reply := func(rcode dnsmessage.RCode, qs []dnsmessage.Question, answers ...dnsmessage.Resource) []byte {
		m := dnsmessage.Message{
			Header: dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, Authoritative: true,
				RecursionDesired: h.RecursionDesired, RecursionAvailable: true, RCode: rcode},
			Questions: qs,
			Answers:   answers,
		}
		b, err := m.Pack()
		if err != nil {
			return nil
		}
		return b
	}
	switch {
	case err != nil || len(qs) != 1:
		return reply(dnsmessage.RCodeFormatError, nil)
	case h.OpCode != 0:
		return reply(dnsmessage.RCodeNotImplemented, nil)
	case qs[0].Class != dnsmessage.ClassINET:
		return reply(dnsmessage.RCodeRefused, qs)
	}
	question := qs[0]
	name, ok := normalizeName(question.Name.String())
	if !ok {
		return reply(dnsmessage.RCodeNameError, qs)
	}
	if question.Type != dnsmessage.TypeA {
		return reply(dnsmessage.RCodeSuccess, qs)
	}
	var a netip.Addr
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	} else if a, err = e.Lookup(name); err != nil {
		return reply(dnsmessage.RCodeServerFailure, qs)
	}
	return reply(dnsmessage.RCodeSuccess, qs, dnsmessage.Resource{
		Header: dnsmessage.ResourceHeader{Name: question.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: dnsTTL},
		Body:   &dnsmessage.AResource{A: a.As4()},
	})
}

// normalizeName normalizes a name as the proxy does (lower case, no
// trailing dot), and tells whether it is a host name: dot-separated labels of
// letters, digits, '-' and '_', 1 to 63 bytes each, at most 253 in all, not
// all of them numbers.
func normalizeName(name string) (string, bool) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" || len(name) > 253 {
		return "", false
	}
	numeric := true
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return "", false
		}
		digits := true
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case '0' <= c && c <= '9':
			case 'a' <= c && c <= 'z' || c == '-' || c == '_':
				digits = false
			default:
				return "", false
			}
		}
		// 0x7f is a number to some resolvers.
		if !digits && !(strings.HasPrefix(label, "0x") && strings.Trim(label[2:], "0123456789abcdef") == "") {
			numeric = false
		}
	}
	if numeric {
		return "", false
	}
	return name, true
}
