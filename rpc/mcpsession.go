package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// mcpSession is a 2025-era client's session: the scope of its ids.
type mcpSession struct {
	// allTools is the session's tools/list choice (see peer.allTools).
	allTools atomic.Bool
	mu       sync.Mutex
	inflight map[string]context.CancelFunc
	last     time.Time
	cancel   context.CancelFunc // ends the session's calls
	ctx      context.Context
}

// newSession starts an MCP session, making room for it.
func (t *httpTransport) newSession() (string, *mcpSession) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	ctx, cancel := context.WithCancel(t.base)
	sess := &mcpSession{inflight: make(map[string]context.CancelFunc), last: time.Now(), ctx: ctx, cancel: cancel}
	if ended := t.opts.SessionEnded; ended != nil {
		context.AfterFunc(ctx, func() { ended(id) })
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for k, s := range t.sessions {
		if now.Sub(s.last) > t.opts.SessionIdle {
			s.cancel()
			delete(t.sessions, k)
		}
	}
	for len(t.sessions) >= t.opts.MaxSessions {
		oldest := ""
		for k, s := range t.sessions {
			if oldest == "" || s.last.Before(t.sessions[oldest].last) {
				oldest = k
			}
		}
		t.sessions[oldest].cancel()
		delete(t.sessions, oldest)
	}
	t.sessions[id] = sess
	return id, sess
}

// session returns the live MCP session id, or nil.
func (t *httpTransport) session(id string) *mcpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.sessions[id]
	if !ok {
		return nil
	}
	if time.Since(s.last) > t.opts.SessionIdle {
		s.cancel()
		delete(t.sessions, id)
		return nil
	}
	s.last = time.Now()
	return s
}

func (t *httpTransport) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	t.mu.Lock()
	s, ok := t.sessions[id]
	delete(t.sessions, id)
	t.mu.Unlock()
	if !ok {
		http.Error(w, "unknown Mcp-Session-Id", http.StatusNotFound)
		return
	}
	s.cancel()
	w.WriteHeader(http.StatusNoContent)
}

// sessionIDKey is the context key of an MCP session's id.
type sessionIDKey struct{}

// SessionID returns the Mcp-Session-Id of the MCP session a call's context
// belongs to. It returns "" for calls outside a session: on stdio, and
// requests of the stateless era.
func SessionID(ctx context.Context) string {
	id, _ := ctx.Value(sessionIDKey{}).(string)
	return id
}
