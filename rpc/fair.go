package rpc

import (
	"fmt"
	"net/http"
	"strings"
)

// requestLimit bounds the HTTP requests one tenant of a server of many
// sandboxes has in flight (long-polls and SSE streams included): a
// sandbox's endpoint, or the management API. A request over it is refused
// at once with 429, naming the limit, so that no tenant can take the
// streams of another.
type requestLimit struct {
	// who is the tenant ("sandbox alpha"); setBy tells what sets the
	// limit ("--sandbox-requests"), or is empty for a fixed one.
	who, setBy string
	slots      chan struct{}
}

// newRequestLimit returns a bound of n requests in flight for who.
func newRequestLimit(who string, n int, setBy string) *requestLimit {
	return &requestLimit{who: who, setBy: setBy, slots: make(chan struct{}, n)}
}

// enter takes a place for one request, or reports that every place is
// taken. Each enter that succeeds is matched by one leave.
func (l *requestLimit) enter() bool {
	select {
	case l.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// leave gives back the place of a request that has ended.
func (l *requestLimit) leave() { <-l.slots }

// inFlight is the number of requests holding a place.
func (l *requestLimit) inFlight() int { return len(l.slots) }

// refusal is the message of a request over l.
func (l *requestLimit) refusal() string {
	n := cap(l.slots)
	set := "a fixed limit"
	if l.setBy != "" {
		set = fmt.Sprintf("set by %s %d", l.setBy, n)
	}
	return fmt.Sprintf("too many concurrent requests: %s has %d requests in flight, its limit (%s); retry once one has ended", l.who, n, set)
}

// refuse answers a request over l: 429 with Retry-After, as a JSON-RPC
// error on an MCP endpoint, as application/problem+json elsewhere.
func (l *requestLimit) refuse(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "1")
	if isMCPPath(r.URL.Path) {
		writeHTTPError(w, http.StatusTooManyRequests, nil, CodeInternalError, l.refusal())
		return
	}
	writeProblem(w, http.StatusTooManyRequests, l.refusal())
}

// isMCPPath reports whether path is an MCP endpoint: /mcp, /s/NAME/mcp
// or /v1/manage/mcp.
func isMCPPath(path string) bool { return path == "/mcp" || strings.HasSuffix(path, "/mcp") }
