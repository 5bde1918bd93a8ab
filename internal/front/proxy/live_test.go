package proxy

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustRules(t *testing.T, allowed, denied []string) *Rules {
	t.Helper()
	r, err := NewRules(allowed, denied)
	require.NoError(t, err)
	return r
}

// New rules decide the requests that come after Set.
func TestLiveSetDecidesNewRequests(t *testing.T) {
	echo := startEcho(t)
	w := world{"a.example:7": echo, "b.example:7": echo}
	live := NewLive(mustRules(t, []string{"a.example"}, nil))
	p := startProxy(t, &Server{Dial: w.dial, Live: live}, nil, nil)

	_, resp, _ := p.connect(t, "b.example:7")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	live.Set(mustRules(t, []string{"a.example", "b.example"}, nil))
	c, resp, _ := p.connect(t, "b.example:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	echoes(t, c, "after widening")

	live.Set(mustRules(t, []string{"b.example"}, []string{"b.example:8"}))
	_, resp, body := p.connect(t, "a.example:7")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, "a.example")
}

// Narrowing closes the open tunnels the new rules refuse, and only those;
// widening closes none.
func TestLiveSetClosesRefusedTunnels(t *testing.T) {
	echo := startEcho(t)
	w := world{"a.example:7": echo, "b.example:7": echo}
	live := NewLive(mustRules(t, []string{"a.example", "b.example"}, nil))
	p := startProxy(t, &Server{Dial: w.dial, Live: live}, nil, nil)

	a, resp, _ := p.connect(t, "a.example:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, resp, _ := p.connect(t, "b.example:7")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	echoes(t, a, "a")
	echoes(t, b, "b")
	waitOpen(t, live, 2)

	assert.Equal(t, 0, live.Set(mustRules(t, []string{"a.example", "b.example", "c.example"}, nil)), "widening")
	echoes(t, a, "a still")
	echoes(t, b, "b still")

	assert.Equal(t, 1, live.Set(mustRules(t, []string{"a.example", "b.example"}, []string{"b.example"})), "narrowing")
	closedByPeer(t, b)
	echoes(t, a, "a after narrowing")
	waitOpen(t, live, 1)

	a.Close()
	waitOpen(t, live, 0)
}

// A connection made while Set ran is either seen by Set or decided by its
// rules: no refused connection stays open.
func TestLiveTrackAfterSet(t *testing.T) {
	echo := startEcho(t)
	w := world{"a.example:7": echo}
	live := NewLive(mustRules(t, []string{"a.example"}, nil))
	c, err := w.dial(t.Context(), "tcp", "a.example:7")
	require.NoError(t, err)
	live.Set(mustRules(t, nil, nil))
	untrack := live.track("a.example", 7, false, c)
	defer untrack()
	assert.Equal(t, 0, live.Open())
	_, err = c.Read(make([]byte, 1))
	assert.ErrorIs(t, err, net.ErrClosed, "closed by track")
}

// Rules swap safely while requests are decided (run with -race).
func TestLiveConcurrentSet(t *testing.T) {
	live := NewLive(mustRules(t, []string{"a.example"}, nil))
	srv := (&Server{Live: live}).withDefaults()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				d := srv.decide(context.Background(), nil, "a.example", 443, "connect")
				if d.rule != "" && !strings.HasSuffix(d.rule, "a.example") {
					t.Errorf("rule %q", d.rule)
					return
				}
			}
		}()
	}
	for i := range 200 {
		if i%2 == 0 {
			live.Set(mustRules(t, nil, []string{"a.example"}))
		} else {
			live.Set(mustRules(t, []string{"*.a.example", "a.example"}, nil))
		}
	}
	close(stop)
	wg.Wait()
}

// waitOpen waits until live has n open upstream connections.
func waitOpen(t *testing.T, live *Live, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return live.Open() == n }, testTimeout, time.Millisecond, "open connections: want %d", n)
}
