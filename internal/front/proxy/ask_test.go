package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// asker is a Server.Ask that counts its questions and answers with the
// answers sent on its channel.
type asker struct {
	asked   atomic.Int32
	started chan askKey
	answers chan Answer
}

func newAsker() *asker {
	return &asker{started: make(chan askKey, 16), answers: make(chan Answer, 16)}
}

func (a *asker) ask(ctx context.Context, host string, port int) Answer {
	a.asked.Add(1)
	a.started <- askKey{host, port}
	select {
	case ans := <-a.answers:
		return ans
	case <-ctx.Done():
		return NoAnswer
	}
}

// decisions collects the decisions of a Server.
type decisions struct {
	mu sync.Mutex
	d  []Decision
}

func (ds *decisions) add(d Decision) {
	ds.mu.Lock()
	ds.d = append(ds.d, d)
	ds.mu.Unlock()
}

func (ds *decisions) all() []Decision {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return append([]Decision(nil), ds.d...)
}

func TestAskAllowOnceAsksAgain(t *testing.T) {
	echo := startEcho(t)
	origin := startOrigin(t)
	w := world{"new.example.org:7": echo, "web.example.org:80": origin}
	a := newAsker()
	var ds decisions
	rules, err := NewRules([]string{"known.example.com"}, nil)
	require.NoError(t, err)
	live := NewLive(rules)
	p := startProxy(t, &Server{Dial: w.dial, Ask: a.ask, Decided: ds.add, Live: live}, nil, nil)

	for i := range 2 {
		a.answers <- AllowOnce
		c, resp, _ := p.connect(t, "new.example.org:7")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		echoes(t, c, "hello")
		assert.Zero(t, live.Set(rules), "a change of rules that do not deny it keeps it open")
		echoes(t, c, "still")
		c.Close()
		assert.EqualValues(t, i+1, a.asked.Load(), "every request asks again")
	}
	a.answers <- AllowOnce
	code, body := p.get(t, "http://web.example.org/page")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "origin /page", body)
	// The proxy ends a connection after its client has closed it, or has
	// the last response: none of those is counted below.
	waitOpen(t, live, 0)

	// A rule that denies it closes it.
	a.answers <- AllowOnce
	c, resp, _ := p.connect(t, "new.example.org:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	denying, err := NewRules([]string{"known.example.com"}, []string{"new.example.org"})
	require.NoError(t, err)
	assert.Equal(t, 1, live.Set(denying))
	closedByPeer(t, c)

	got := ds.all()
	require.Len(t, got, 4)
	assert.Equal(t, Decision{Host: "new.example.org", Port: 7, Protocol: "connect", Allowed: true, Asked: true, Answer: AllowOnce}, got[0])
}

// startOrigin starts an HTTP server that answers "origin PATH".
func startOrigin(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "origin %s", r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func TestAskDeny(t *testing.T) {
	a := newAsker()
	var ds decisions
	p := startProxy(t, &Server{Dial: world{}.dial, Ask: a.ask, Decided: ds.add}, nil, []string{"bad.example.com"})

	a.answers <- Deny
	_, resp, body := p.connect(t, "new.example.org:443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, "denied by the user")
	got := ds.all()
	require.Len(t, got, 1)
	assert.Equal(t, ReasonDenied, got[0].Reason)
	assert.Equal(t, Deny, got[0].Answer)

	// A denied pattern and an invalid name are never asked about.
	_, resp, _ = p.connect(t, "bad.example.com:443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	_, resp, _ = p.connect(t, "bad_name!:443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.EqualValues(t, 1, a.asked.Load())
}

func TestAskTimeout(t *testing.T) {
	a := newAsker()
	var ds decisions
	p := startProxy(t, &Server{Dial: world{}.dial, Ask: a.ask, Decided: ds.add, AskTimeout: 100 * time.Millisecond}, nil, nil)

	start := time.Now()
	_, resp, _ := p.connect(t, "new.example.org:443")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	got := ds.all()
	require.Len(t, got, 1)
	assert.True(t, got[0].Asked)
	assert.Equal(t, NoAnswer, got[0].Answer)
	assert.Equal(t, ReasonUnanswered, got[0].Reason)
}

// TestAskShared checks that requests to one destination share the question
// in flight, and all get its answer.
func TestAskShared(t *testing.T) {
	echo := startEcho(t)
	w := world{"new.example.org:7": echo}
	a := newAsker()
	var ds decisions
	p := startProxy(t, &Server{Dial: w.dial, Ask: a.ask, Decided: ds.add}, nil, nil)

	const n = 4
	var joins atomic.Int32
	joined = func(string, int) { joins.Add(1) }
	t.Cleanup(func() { joined = nil })
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for range n {
		wg.Go(func() {
			c, resp, _ := p.connect(t, "new.example.org:7")
			if c != nil {
				defer c.Close()
			}
			codes <- resp.StatusCode
		})
	}
	select {
	case k := <-a.started:
		assert.Equal(t, askKey{"new.example.org", 7}, k)
	case <-time.After(testTimeout):
		t.Fatal("no question")
	}
	// Wait until every request waits on the question, then answer.
	require.Eventually(t, func() bool { return joins.Load() == n-1 }, testTimeout, time.Millisecond)
	assert.Empty(t, ds.all(), "no request decided before the answer")
	a.answers <- AllowOnce
	wg.Wait()
	close(codes)
	for code := range codes {
		assert.Equal(t, http.StatusOK, code)
	}
	assert.EqualValues(t, 1, a.asked.Load())
	assert.Len(t, ds.all(), n)
}
