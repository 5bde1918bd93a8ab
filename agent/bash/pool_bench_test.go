package bash

import (
	"context"
	"testing"

	"github.com/boxsh/boxsh/tool"
)

// BenchmarkRunEcho measures one sequential call of `echo x` through a pool
// of four workers: the latency a client sees, less the protocol.
func BenchmarkRunEcho(b *testing.B) {
	p, err := NewPool(Options{Workers: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := p.Run(ctx, nil, tool.BashArgs{Command: "echo x"})
		if err != nil || out.Stdout != "x\n" {
			b.Fatalf("run: %v %+v", err, out)
		}
	}
}

// BenchmarkRunColdEcho is the same call with a shell started on demand (a
// call with its own working directory), for comparison.
func BenchmarkRunColdEcho(b *testing.B) {
	p, err := NewPool(Options{Workers: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := p.Run(ctx, nil, tool.BashArgs{Command: "echo x", Cwd: "/"})
		if err != nil || out.Stdout != "x\n" {
			b.Fatalf("run: %v %+v", err, out)
		}
	}
}
