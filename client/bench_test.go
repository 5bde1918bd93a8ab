package client

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The same bash call ("true") three ways against one plain server each:
// through this client, as raw newline-delimited JSON-RPC (write a line,
// read a line, no decoding), and through the official Go MCP SDK. The
// client's cost is its time minus the raw protocol's.

func BenchmarkExecClient(b *testing.B) {
	c, err := Start(context.Background(), Options{Binary: boxshBin(), Dir: b.TempDir(), Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		r, err := c.Run(ctx, "true")
		if err != nil || r.ExitCode != 0 {
			b.Fatal(err, r)
		}
	}
}

func BenchmarkExecRawProtocol(b *testing.B) {
	cmd := exec.Command(boxshBin(), "--rpc", "--workers", "1")
	cmd.Dir = b.TempDir()
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	br := bufio.NewReaderSize(out, 64<<10)
	call := func(id int) {
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"bash","arguments":{"command":"true"}}}`+"\n", id)
		if _, err := br.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
	call(0)
	b.ResetTimer()
	id := 1
	for b.Loop() {
		call(id)
		id++
	}
}

func BenchmarkExecMCPSDK(b *testing.B) {
	ctx := context.Background()
	cmd := exec.Command(boxshBin(), "--rpc", "--workers", "1")
	cmd.Dir = b.TempDir()
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	s, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for b.Loop() {
		r, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "true"}})
		if err != nil || r.IsError {
			b.Fatal(err, r)
		}
	}
}

// BenchmarkChanges10k lists a DST of 10 000 changed files: 100
// directories of 100 files, a third added, a third modified with another
// size, a third modified with the same size (compared byte by byte).
func BenchmarkChanges10k(b *testing.B) {
	dir := b.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	for d := range 100 {
		for _, root := range []string{src, dst} {
			if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%03d", d)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for f := range 100 {
			rel := filepath.Join(fmt.Sprintf("d%03d", d), fmt.Sprintf("f%03d.txt", f))
			switch f % 3 {
			case 1:
				os.WriteFile(filepath.Join(src, rel), []byte("short\n"), 0o644)
				os.WriteFile(filepath.Join(dst, rel), []byte("a longer line\n"), 0o644)
			case 2:
				os.WriteFile(filepath.Join(src, rel), []byte("same size 1\n"), 0o644)
				os.WriteFile(filepath.Join(dst, rel), []byte("same size 2\n"), 0o644)
			default:
				os.WriteFile(filepath.Join(dst, rel), []byte("new\n"), 0o644)
			}
		}
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op") }()
	for b.Loop() {
		cs, err := Changes(src, dst)
		if err != nil {
			b.Fatal(err)
		}
		if len(cs) != 10000 {
			b.Fatalf("%d changes", len(cs))
		}
	}
}

// cpuTime is the process's user and system CPU time so far: on a machine
// shared with other work, a steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkExecOverhead interleaves the three ways of BenchmarkExec* call
// by call, so that the load of a shared machine falls on each alike, and
// reports each one's mean time per call and the client's extra time over
// the raw protocol.
func BenchmarkExecOverhead(b *testing.B) {
	ctx := context.Background()
	c, err := Start(ctx, Options{Binary: boxshBin(), Dir: b.TempDir(), Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()

	raw := exec.Command(boxshBin(), "--rpc", "--workers", "1")
	raw.Dir = b.TempDir()
	in, _ := raw.StdinPipe()
	out, _ := raw.StdoutPipe()
	if err := raw.Start(); err != nil {
		b.Fatal(err)
	}
	defer raw.Wait()
	defer in.Close()
	br := bufio.NewReaderSize(out, 64<<10)
	id := 0
	rawCall := func() {
		id++
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"bash","arguments":{"command":"true"}}}`+"\n", id)
		if _, err := br.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}

	sdkCmd := exec.Command(boxshBin(), "--rpc", "--workers", "1")
	sdkCmd.Dir = b.TempDir()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: sdkCmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	var tRaw, tClient, tSDK time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		rawCall()
		t1 := time.Now()
		if _, err := c.Run(ctx, "true"); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "true"}}); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		tRaw += t1.Sub(t0)
		tClient += t2.Sub(t1)
		tSDK += t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tRaw.Microseconds())/n, "raw-µs/call")
	b.ReportMetric(float64(tClient.Microseconds())/n, "client-µs/call")
	b.ReportMetric(float64(tSDK.Microseconds())/n, "sdk-µs/call")
	b.ReportMetric(float64((tClient-tRaw).Microseconds())/n, "client-extra-µs/call")
	b.ReportMetric(float64((tSDK-tRaw).Microseconds())/n, "sdk-extra-µs/call")
}
