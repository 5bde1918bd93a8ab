package proxy

import (
	"net"
	"sync"
	"sync/atomic"
)

// Live holds rules that may be replaced while a proxy serves, and the
// upstream connections open under them.
//
// A Server whose Live is set decides every new request by the rules Live
// holds at that moment. Set replaces them, and closes the open connections
// that the new rules refuse: a tunnel the new rules would not have opened
// does not outlive the change. It is safe for concurrent use.
type Live struct {
	rules atomic.Pointer[Rules]

	mu   sync.Mutex
	open map[*upstream]struct{}
}

// upstream is one open upstream connection, to the destination decided.
type upstream struct {
	host string
	port int
	c    net.Conn
	// answered tells that an answer allowed it (Server.Ask), not a rule:
	// only a rule that denies it closes it.
	answered bool
}

// refusedBy tells whether r refuses u.
func (u *upstream) refusedBy(r *Rules) bool {
	d := r.decide(u.host, u.port)
	if u.answered {
		return d.denied
	}
	return !d.allowed
}

// NewLive returns a Live holding r.
func NewLive(r *Rules) *Live {
	l := &Live{open: make(map[*upstream]struct{})}
	l.rules.Store(r)
	return l
}

// Rules returns the rules in force.
func (l *Live) Rules() *Rules { return l.rules.Load() }

// Set puts r in force for the requests to come. It closes every open
// upstream connection whose destination r refuses, and returns how many it
// closed.
func (l *Live) Set(r *Rules) int {
	l.rules.Store(r)
	l.mu.Lock()
	var refused []*upstream
	for u := range l.open {
		if u.refusedBy(r) {
			refused = append(refused, u)
			delete(l.open, u)
		}
	}
	l.mu.Unlock()
	for _, u := range refused {
		u.c.Close()
	}
	return len(refused)
}

// Open returns how many upstream connections are open.
func (l *Live) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

// track registers c, an upstream connection to host:port, until the
// returned function is called. answered tells that an answer allowed it,
// not a rule.
//
// Rules set while c was being connected may already refuse it: it is
// closed then (and the copy over it fails).
func (l *Live) track(host string, port int, answered bool, c net.Conn) (untrack func()) {
	u := &upstream{host: host, port: port, c: c, answered: answered}
	l.mu.Lock()
	l.open[u] = struct{}{}
	l.mu.Unlock()
	// Set stores its rules before it walks the open connections: either
	// it saw u, or this sees its rules.
	if u.refusedBy(l.Rules()) {
		l.mu.Lock()
		delete(l.open, u)
		l.mu.Unlock()
		c.Close()
	}
	return func() {
		l.mu.Lock()
		delete(l.open, u)
		l.mu.Unlock()
	}
}
