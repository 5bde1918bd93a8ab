package proxy

import (
	"context"
	"sync"
	"time"
)

// DefaultAskTimeout is how long a request to a destination on no list
// waits for the answer of Server.Ask (see Server.AskTimeout).
const DefaultAskTimeout = 60 * time.Second

// An Answer is how the user answered a question about a destination.
type Answer int

// The answers.
const (
	// NoAnswer is no answer within the bound, or no way to ask: the
	// request is refused.
	NoAnswer Answer = iota
	// AllowOnce lets the requests that waited for the answer through.
	AllowOnce
	// AllowSandbox lets them through too; Ask has added the destination
	// to the rules for the requests to come.
	AllowSandbox
	// Deny refuses the requests that waited for the answer.
	Deny
)

// String is the name of a in the audit log and the elicitation's enum.
func (a Answer) String() string {
	switch a {
	case AllowOnce:
		return "allow_once"
	case AllowSandbox:
		return "allow_sandbox"
	case Deny:
		return "deny"
	}
	return "none"
}

// ReasonDenied is the Reason of a refusal that the user answered Deny.
const ReasonDenied = "denied by the user"

// ReasonUnanswered is the Reason of a refusal that got no answer.
const ReasonUnanswered = "not in the allowlist, and no answer to the question"

// askKey is what one question is about.
type askKey struct {
	host string
	port int
}

// question is one call of Ask, which the requests to its destination share.
type question struct {
	done   chan struct{}
	answer Answer
}

// asks holds the questions in flight.
type asks struct {
	mu sync.Mutex
	m  map[askKey]*question
}

// joined, when set, is told of each request that waits on a question
// already asked. A variable for tests.
var joined func(host string, port int)

// askable tells whether d may be asked about: refused, and named by no
// rule (neither denied nor invalid).
func askable(d decision) bool {
	return !d.allowed && !d.denied && !d.invalid && d.rule == ""
}

// ask asks srv.Ask about host:port, or waits for the question already
// asked, and returns the answer. The question is bounded by AskTimeout
// and by ctx, the server's; a request gone meanwhile leaves it running for
// the others.
func (srv *server) ask(ctx context.Context, host string, port int) Answer {
	k := askKey{host, port}
	srv.asks.mu.Lock()
	q, asked := srv.asks.m[k]
	if !asked {
		q = &question{done: make(chan struct{})}
		srv.asks.m[k] = q
	}
	srv.asks.mu.Unlock()
	if asked && joined != nil {
		joined(host, port)
	}
	if !asked {
		go func() {
			actx, cancel := context.WithTimeout(ctx, srv.AskTimeout)
			defer cancel()
			a := srv.Ask(actx, host, port)
			if actx.Err() != nil {
				a = NoAnswer // an answer after the bound comes too late
			}
			srv.asks.mu.Lock()
			delete(srv.asks.m, k)
			srv.asks.mu.Unlock()
			q.answer = a
			close(q.done)
		}()
	}
	select {
	case <-q.done:
		return q.answer
	case <-ctx.Done():
		return NoAnswer
	}
}
