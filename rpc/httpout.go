package rpc

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// httpOut is the one answer of an HTTP exchange. Whoever finishes the call
// writes it straight to the connection, as on stdio; for boxsh-init that
// is the goroutine reading its replies. The handler waits for done
// meanwhile, so there is no hand-over on the way out.
type httpOut struct {
	t       *httpTransport
	w       http.ResponseWriter
	r       *http.Request
	modern  bool   // map error codes to statuses
	session string // a new MCP session's id
	code    int    // the error code noted, 0 for a result
	done    chan struct{}

	mu        sync.Mutex
	written   bool // the answer went out, or the handler has returned
	streaming bool // an SSE stream was started for notifications
}

// notify sends a notification about the request ahead of its answer, which
// makes the answer an SSE stream; dropped for a client that takes only
// JSON.
func (o *httpOut) notify(msg []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.written || !strings.Contains(o.r.Header.Get("Accept"), "text/event-stream") {
		return nil
	}
	w := o.w
	if !o.streaming {
		o.streaming = true
		setSSEHeaders(w.Header())
		if o.session != "" {
			w.Header().Set("Mcp-Session-Id", o.session)
		}
		w.WriteHeader(http.StatusOK)
	}
	_, _ = io.WriteString(w, ssePrefix)
	_, _ = w.Write(msg)
	_, _ = io.WriteString(w, sseSuffix)
	return flush(w)
}

// flush sends what w holds to the client.
func flush(w http.ResponseWriter) error {
	if f, ok := w.(interface{ FlushError() error }); ok {
		return f.FlushError()
	}
	return http.NewResponseController(w).Flush()
}

func (o *httpOut) noteError(code int) { o.code = code }

func (o *httpOut) write(parts ...[]byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.written {
		return nil // too late, or a second answer (never for one request)
	}
	o.written = true
	defer close(o.done)
	w := o.w
	if o.streaming {
		_, _ = io.WriteString(w, ssePrefix)
		for _, p := range parts {
			_, _ = w.Write(p)
		}
		_, _ = io.WriteString(w, sseSuffix)
		_ = flush(w)
		return nil
	}
	h := w.Header()
	if o.session != "" {
		h.Set("Mcp-Session-Id", o.session)
	}
	status := http.StatusOK
	if o.modern {
		status = modernStatus(o.code)
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	sse := wantsSSE(o.r.Header.Get("Accept"))
	if sse {
		setSSEHeaders(h)
		n += len(ssePrefix) + len(sseSuffix)
	} else {
		h["Content-Type"] = contentTypeJSON
	}
	h["Content-Length"] = []string{strconv.Itoa(n)}
	w.WriteHeader(status)
	if sse {
		_, _ = io.WriteString(w, ssePrefix)
	}
	for _, p := range parts {
		_, _ = w.Write(p)
	}
	if sse {
		_, _ = io.WriteString(w, sseSuffix)
	}
	_ = flush(w)
	return nil
}

// setSSEHeaders makes h the headers of an unbuffered event stream.
func setSSEHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
}

// accepted answers a notification: 202, no body.
func (o *httpOut) accepted() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.written {
		o.written = true
		o.w.WriteHeader(http.StatusAccepted)
	}
}

// close ends the exchange: later answers are dropped.
func (o *httpOut) close() {
	o.mu.Lock()
	o.written = true
	o.mu.Unlock()
}

func (o *httpOut) failed() error { return nil }

// writeHTTPError answers with status and a JSON-RPC error.
func writeHTTPError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Error   Error           `json:"error"`
	}{"2.0", id, Error{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
