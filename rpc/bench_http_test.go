package rpc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/boxsh/boxsh/internal/tool"
)

// BenchmarkHTTPRoundTripRaw is BenchmarkHTTPRoundTrip with a minimal
// keep-alive client on one connection, as integration/bench measures:
// the allocations and time left are the server's.
func BenchmarkHTTPRoundTripRaw(b *testing.B) {
	tools, err := tool.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{Tools: tools, Backend: &fakeBackend{}, Name: "boxsh", Version: "bench"}
	opts := HTTPOptions{Token: testToken}
	ln, err := Listen("127.0.0.1:0", opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeStreamable(ctx, ln, opts) }()
	defer func() { cancel(); <-done }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	body := modernReq("1", "tools/call", `"name":"bash","arguments":{"command":"x"}`)
	req := []byte(fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: bash\r\nContent-Length: %d\r\n\r\n%s",
		ln.Addr(), testToken, len(body), body))
	br := bufio.NewReader(conn)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatal(res.Status)
		}
	}
}
