package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// ServeStarting answers on ln while the server gets ready to serve it
// (a server of many sandboxes hosting an earlier server's sandboxes
// again), until the returned stop is called:
//   - /healthz: 200, the server is alive;
//   - /readyz: 503 with why;
//   - anything else: 503 with Retry-After, a problem naming why.
//
// stop leaves ln open, for ServeStreamable. ln must be a *net.TCPListener
// (or have its SetDeadline); with another, ServeStarting serves nothing and
// stop does nothing.
func ServeStarting(ln net.Listener, opts HTTPOptions, why string) (stop func()) {
	dl, ok := ln.(interface{ SetDeadline(time.Time) error })
	if !ok {
		return func() {}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if opts.ServerID != "" {
			w.Header()[ServerHeader] = []string{opts.ServerID}
		}
		w.Header().Set("Cache-Control", "no-store")
		switch r.URL.Path {
		case "/healthz":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "ok\n")
		case "/readyz":
			w.Header().Set("Retry-After", "1")
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
		default:
			w.Header().Set("Retry-After", "1")
			writeProblem(w, http.StatusServiceUnavailable, "the server is starting ("+why+"): retry later")
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	// Every answer closes its connection: none is left to a client's pool
	// to break when stop closes it.
	srv.SetKeepAlivesEnabled(false)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(&startingListener{Listener: ln, deadline: dl})
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			_ = srv.Close()
		}
		<-served
		_ = dl.SetDeadline(time.Time{})
	}
}

// startingListener is ln whose Close ends the Accept in progress (by a
// deadline) but leaves ln open.
type startingListener struct {
	net.Listener
	deadline interface{ SetDeadline(time.Time) error }
}

func (l *startingListener) Close() error { return l.deadline.SetDeadline(time.Unix(1, 0)) }
