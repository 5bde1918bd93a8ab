package netfwd

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"
)

const testTimeout = 5 * time.Second

// testPrefix is a range of the loopback of its own for each test, so that
// tests that run at once do not share addresses.
func testPrefix() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{127, 99, byte(rand.IntN(256)), 0}), 24)
}

// freePort is a port that was free on the loopback a moment ago.
func freePort(t *testing.T) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

func query(t *testing.T, name string, typ dnsmessage.Type, more ...dnsmessage.Question) []byte {
	t.Helper()
	m := dnsmessage.Message{Header: dnsmessage.Header{ID: 4242, RecursionDesired: true},
		Questions: append([]dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}}, more...)}
	b, err := m.Pack()
	require.NoError(t, err)
	return b
}

func parse(t *testing.T, b []byte) dnsmessage.Message {
	t.Helper()
	require.NotNil(t, b, "an answer")
	var m dnsmessage.Message
	require.NoError(t, m.Unpack(b))
	assert.Equal(t, uint16(4242), m.Header.ID)
	assert.True(t, m.Header.Response)
	return m
}

// addrOf is the A answer of m.
func addrOf(t *testing.T, m dnsmessage.Message) netip.Addr {
	t.Helper()
	require.Equal(t, dnsmessage.RCodeSuccess, m.Header.RCode)
	require.Len(t, m.Answers, 1)
	a, ok := m.Answers[0].Body.(*dnsmessage.AResource)
	require.True(t, ok, "an A record")
	return netip.AddrFrom4(a.A)
}

func newEgress(t *testing.T, ports []uint16, pass func(c *net.TCPConn, name string, port uint16) error) *Egress {
	t.Helper()
	if pass == nil {
		pass = refuse
	}
	e := &Egress{Ports: ports, Prefix: testPrefix(), Pass: pass}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	t.Cleanup(func() { cancel(); e.Wait() })
	return e
}

// refuse is a front that is gone.
func refuse(*net.TCPConn, string, uint16) error { return errors.New("refused") }

// own is a connection of the front's own, as the descriptor passed is.
func own(t *testing.T, c *net.TCPConn) net.Conn {
	f, err := c.File()
	if err != nil {
		t.Error(err)
		return nil
	}
	defer f.Close()
	fc, err := net.FileConn(f)
	if err != nil {
		t.Error(err)
	}
	return fc
}

// Each name gets an address of its own in the range, the same every time,
// whatever its case or trailing dot; AAAA and other types get no answer.
func TestAnswer(t *testing.T) {
	e := newEgress(t, []uint16{freePort(t)}, nil)
	a := addrOf(t, parse(t, e.Answer(query(t, "example.com.", dnsmessage.TypeA))))
	assert.True(t, e.Prefix.Contains(a), "%v in %v", a, e.Prefix)
	assert.Equal(t, a, addrOf(t, parse(t, e.Answer(query(t, "EXAMPLE.com.", dnsmessage.TypeA)))), "stable, case-insensitive")
	b := addrOf(t, parse(t, e.Answer(query(t, "other.example.com.", dnsmessage.TypeA))))
	assert.NotEqual(t, a, b)

	for _, typ := range []dnsmessage.Type{dnsmessage.TypeAAAA, dnsmessage.TypeMX, dnsmessage.TypeTXT, dnsmessage.TypeSRV, 65 /* HTTPS */} {
		m := parse(t, e.Answer(query(t, "new.example.com.", typ)))
		assert.Equal(t, dnsmessage.RCodeSuccess, m.Header.RCode, "%v", typ)
		assert.Empty(t, m.Answers, "%v", typ)
	}
	e.mu.Lock()
	assert.Len(t, e.names, 2, "only A queries take an address")
	e.mu.Unlock()

	assert.Equal(t, netip.MustParseAddr("127.0.0.1"), addrOf(t, parse(t, e.Answer(query(t, "localhost.", dnsmessage.TypeA)))))
	assert.Equal(t, netip.MustParseAddr("127.0.0.1"), addrOf(t, parse(t, e.Answer(query(t, "db.LocalHost.", dnsmessage.TypeA)))))
}

// Attacks on the name service: names that are not host names or are
// numbers, many questions, other opcodes and classes, responses.
func TestAnswerRefuses(t *testing.T) {
	e := newEgress(t, []uint16{freePort(t)}, nil)
	for _, name := range []string{"127.1.", "2130706433.", "0x7f000001.", "127.0.0.1.", "a b.example.", "a..b.", "x\\000y."} {
		n, err := dnsmessage.NewName(name)
		if err != nil {
			continue
		}
		m := dnsmessage.Message{Header: dnsmessage.Header{ID: 4242}, Questions: []dnsmessage.Question{{Name: n, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}}}
		b, err := m.Pack()
		if err != nil {
			continue
		}
		got := parse(t, e.Answer(b))
		assert.Equal(t, dnsmessage.RCodeNameError, got.Header.RCode, "%q", name)
		assert.Empty(t, got.Answers, "%q", name)
	}

	many := make([]dnsmessage.Question, 50)
	for i := range many {
		many[i] = dnsmessage.Question{Name: dnsmessage.MustNewName("n" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".example."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}
	}
	m := parse(t, e.Answer(query(t, "first.example.", dnsmessage.TypeA, many...)))
	assert.Equal(t, dnsmessage.RCodeFormatError, m.Header.RCode, "many questions")
	assert.Empty(t, m.Answers)

	chaos := query(t, "version.bind.", dnsmessage.TypeTXT)
	binary.BigEndian.PutUint16(chaos[len(chaos)-2:], uint16(dnsmessage.ClassCHAOS))
	assert.Equal(t, dnsmessage.RCodeRefused, parse(t, e.Answer(chaos)).Header.RCode)

	notify := query(t, "example.com.", dnsmessage.TypeA)
	notify[2] |= 4 << 3 // opcode NOTIFY
	assert.Equal(t, dnsmessage.RCodeNotImplemented, parse(t, e.Answer(notify)).Header.RCode)

	response := query(t, "example.com.", dnsmessage.TypeA)
	response[2] |= 0x80
	assert.Nil(t, e.Answer(response), "a response is ignored")
	assert.Nil(t, e.Answer([]byte{1, 2, 3}), "garbage is ignored")

	e.mu.Lock()
	assert.Empty(t, e.names, "no refused name took an address")
	e.mu.Unlock()
}

// A flood of names exhausts only the names' bound: past it, new names get
// SERVFAIL and no listener, and the names already given keep their address.
func TestAnswerBound(t *testing.T) {
	ports := []uint16{freePort(t), freePort(t)}
	e := &Egress{Ports: ports, Prefix: testPrefix(), MaxNames: 5, Pass: refuse}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	defer func() { cancel(); e.Wait() }()
	first := addrOf(t, parse(t, e.Answer(query(t, "n0.flood.example.", dnsmessage.TypeA))))
	for i := 1; i < 5; i++ {
		addrOf(t, parse(t, e.Answer(query(t, "n"+string(rune('0'+i))+".flood.example.", dnsmessage.TypeA))))
	}
	for i := 0; i < 100; i++ {
		m := parse(t, e.Answer(query(t, "x"+string(rune('a'+i%26))+string(rune('a'+i/26))+".flood.example.", dnsmessage.TypeA)))
		assert.Equal(t, dnsmessage.RCodeServerFailure, m.Header.RCode)
	}
	assert.Equal(t, first, addrOf(t, parse(t, e.Answer(query(t, "n0.flood.example.", dnsmessage.TypeA)))))
	e.mu.Lock()
	assert.Len(t, e.names, 5)
	assert.Len(t, e.lns, 5*len(ports), "a listener per name and port, no more")
	e.mu.Unlock()

	// The listeners bound the names too.
	big := &Egress{Ports: make([]uint16, 1000)}
	big.init()
	assert.Equal(t, maxListeners/1000, big.MaxNames)
}

// A connection to a name's address on a captured port is passed for the
// name and port; a refused one is reset; another port has no listener.
func TestCapture(t *testing.T) {
	port, other := freePort(t), freePort(t)
	type dialed struct {
		name string
		port uint16
	}
	var mu sync.Mutex
	var got []dialed
	e := newEgress(t, []uint16{port}, func(c *net.TCPConn, name string, p uint16) error {
		mu.Lock()
		got = append(got, dialed{name, p})
		mu.Unlock()
		if name != "allowed.example" {
			return errors.New("refused")
		}
		front := own(t, c)
		go func() {
			defer front.Close()
			line, _ := bufio.NewReader(front).ReadString('\n')
			_, _ = front.Write([]byte("via " + name + ": " + line))
		}()
		return nil
	})
	allowed := addrOf(t, parse(t, e.Answer(query(t, "Allowed.Example.", dnsmessage.TypeA))))
	refused := addrOf(t, parse(t, e.Answer(query(t, "refused.example.", dnsmessage.TypeA))))

	c, err := net.DialTimeout("tcp", netip.AddrPortFrom(allowed, port).String(), testTimeout)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	_, err = c.Write([]byte("hello\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "via allowed.example: hello\n", line)
	c.Close()

	// The reset may come before connect returns.
	c, err = net.DialTimeout("tcp", netip.AddrPortFrom(refused, port).String(), testTimeout)
	if err == nil {
		require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	assert.ErrorContains(t, err, "reset", "a refusal resets the connection")

	_, err = net.DialTimeout("tcp", netip.AddrPortFrom(allowed, other).String(), testTimeout)
	assert.ErrorContains(t, err, "refused", "a port not captured")
	_, err = net.DialTimeout("tcp", netip.AddrPortFrom(e.Prefix.Addr().Next().Next().Next().Next().Next().Next().Next(), port).String(), testTimeout)
	assert.Error(t, err, "an address not given")

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []dialed{{"allowed.example", port}, {"refused.example", port}}, got)
}

// The name service answers over UDP and over TCP.
func TestServeDNS(t *testing.T) {
	e := newEgress(t, []uint16{freePort(t)}, nil)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.ServeDNS(ctx, pc, l); close(done) }()
	defer func() { cancel(); <-done }()

	u, err := net.Dial("udp", pc.LocalAddr().String())
	require.NoError(t, err)
	defer u.Close()
	require.NoError(t, u.SetDeadline(time.Now().Add(testTimeout)))
	_, err = u.Write(query(t, "udp.example.", dnsmessage.TypeA))
	require.NoError(t, err)
	buf := make([]byte, 512)
	n, err := u.Read(buf)
	require.NoError(t, err)
	viaUDP := addrOf(t, parse(t, buf[:n]))

	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	r := bufio.NewReader(c)
	for range 2 {
		q := query(t, "udp.example.", dnsmessage.TypeA)
		_, err = c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(q))), q...))
		require.NoError(t, err)
		var size [2]byte
		_, err = r.Read(size[:])
		require.NoError(t, err)
		b := make([]byte, binary.BigEndian.Uint16(size[:]))
		_, err = r.Read(b)
		require.NoError(t, err)
		assert.Equal(t, viaUDP, addrOf(t, parse(t, b)), "TCP, the same address")
	}

	// Ending ctx closes both.
	cancel()
	<-done
	_, err = net.Dial("tcp", l.Addr().String())
	assert.Error(t, err)
}

// An address whose port a program of the sandbox holds already is skipped:
// the program must not get the name's connections.
func TestLookupSkipsHeldAddress(t *testing.T) {
	port := freePort(t)
	e := newEgress(t, []uint16{port}, nil)
	held := e.Prefix.Addr().Next()
	l, err := net.Listen("tcp", netip.AddrPortFrom(held, port).String())
	require.NoError(t, err)
	defer l.Close()
	a, err := e.Lookup("squatted.example")
	require.NoError(t, err)
	assert.NotEqual(t, held, a)
	assert.True(t, e.Prefix.Contains(a))
}
