package rpc

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/boxsh/boxsh/internal/tool"
)

// BenchmarkHTTPRoundTrip is one modern tools/call over loopback HTTP with
// an instant backend: the transport's own cost.
func BenchmarkHTTPRoundTrip(b *testing.B) {
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
	url := "http://" + ln.Addr().String() + "/mcp"
	body := modernReq("1", "tools/call", `"name":"bash","arguments":{"command":"x"}`)
	client := &http.Client{}
	b.ResetTimer()
	for range b.N {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernHeaders("tools/call", "bash") {
			req.Header.Set(k, v)
		}
		res, err := client.Do(req)
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

// BenchmarkStdioRoundTrip is the same call through Serve on pipes.
func BenchmarkStdioRoundTrip(b *testing.B) {
	tools, err := tool.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{Tools: tools, Backend: &fakeBackend{}, Name: "boxsh", Version: "bench"}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _ = s.Serve(context.Background(), inR, outW); outW.Close() }()
	defer inW.Close()
	line := modernReq("1", "tools/call", `"name":"bash","arguments":{"command":"x"}`) + "\n"
	buf := make([]byte, 64<<10)
	b.ResetTimer()
	for range b.N {
		if _, err := io.WriteString(inW, line); err != nil {
			b.Fatal(err)
		}
		n := 0
		for n == 0 || buf[n-1] != '\n' {
			m, err := outR.Read(buf[n:])
			if err != nil {
				b.Fatal(err)
			}
			n += m
		}
	}
}

// instantBackend answers every call at once, on the caller's goroutine,
// with a fixed result: what remains is the server's own cost.
type instantBackend struct{}

func (instantBackend) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) error {
	done(json.RawMessage(`{"content":[{"type":"text","text":"x\n"}]}`), nil)
	return nil
}

// BenchmarkStdioLegacyCall is one 2024-11-05 tools/call of bash through
// Serve on pipes with an instant backend: the front's cost per call.
func BenchmarkStdioLegacyCall(b *testing.B) {
	call := pipedServer(b, instantBackend{})
	line := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo x"}}}` + "\n"
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		call(line)
	}
}

// pipedServer serves the tools through Serve on pipes with backend, and
// returns what writes one request line and reads its answer line (valid
// until the next call).
func pipedServer(b *testing.B, backend Backend) func(line string) []byte {
	b.Helper()
	tools, err := tool.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{Tools: tools, Backend: backend, Name: "boxsh", Version: "bench"}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _ = s.Serve(context.Background(), inR, outW); outW.Close() }()
	b.Cleanup(func() { inW.Close() })
	buf := make([]byte, 64<<10)
	return func(line string) []byte {
		if _, err := io.WriteString(inW, line); err != nil {
			b.Fatal(err)
		}
		n := 0
		for n == 0 || buf[n-1] != '\n' {
			m, err := outR.Read(buf[n:])
			if err != nil {
				b.Fatal(err)
			}
			n += m
		}
		return buf[:n]
	}
}
