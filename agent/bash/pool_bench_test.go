package bash

import (
	"context"
	"testing"

	"github.com/boxsh/boxsh/tool"
)

// benchmarkEcho runs `echo x` calls one after another through a pool of
// four workers: the latency a client sees, less the protocol.
func benchmarkEcho(b *testing.B, args tool.BashArgs) {
	p, err := NewPool(Options{Workers: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := p.Run(ctx, nil, args)
		if err != nil || out.Stdout != "x\n" {
			b.Fatalf("run: %v %+v", err, out)
		}
	}
}

// BenchmarkRunEcho uses the warm shells.
func BenchmarkRunEcho(b *testing.B) { benchmarkEcho(b, tool.BashArgs{Command: "echo x"}) }

// BenchmarkRunColdEcho starts a shell per call (a call with its own working
// directory does), for comparison.
func BenchmarkRunColdEcho(b *testing.B) { benchmarkEcho(b, tool.BashArgs{Command: "echo x", Cwd: "/"}) }

// BenchmarkRunTrueParallel keeps every worker busy with `true` calls, as a
// client that sends many calls at once does: the pool's throughput, less
// the protocol.
func BenchmarkRunTrueParallel(b *testing.B) {
	p, err := NewPool(Options{Workers: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	b.SetParallelism(4) // goroutines per GOMAXPROCS: more callers than workers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if out, err := p.Run(ctx, nil, tool.BashArgs{Command: "true"}); err != nil || out.ExitCode != 0 {
				b.Errorf("run: %v %+v", err, out)
				return
			}
		}
	})
}
