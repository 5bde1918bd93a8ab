package bash

import (
	"context"
	"testing"
	"time"

	"github.com/boxsh/boxsh/internal/tool"
)

// inBothModesBench runs bench with warm shells cloned from a zygote (when
// the fork-server library could be built) and with every shell started by
// exec for its call (no fork server).
func inBothModesBench(b *testing.B, bench func(b *testing.B, p *Pool)) {
	for _, mode := range []struct{ name, lib string }{{"zygote", forkServer}, {"exec", ""}} {
		b.Run(mode.name, func(b *testing.B) {
			if mode.name == "zygote" && forkServer == "" {
				b.Skipf("no fork-server library on this platform: %v", forkServerErr)
			}
			p, err := NewPool(Options{Workers: 4, ForkServer: mode.lib})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			b.ResetTimer()
			bench(b, p)
		})
	}
}

// benchmarkEcho runs `echo x` calls one after another through a pool of
// four workers: the latency a client sees, less the protocol.
func benchmarkEcho(b *testing.B, args tool.BashArgs) {
	inBothModesBench(b, func(b *testing.B, p *Pool) {
		ctx := context.Background()
		for i := 0; i < b.N; i++ {
			out, err := p.Run(ctx, nil, args)
			if err != nil || out.Stdout != "x\n" {
				b.Fatalf("run: %v %+v", err, out)
			}
		}
	})
}

// BenchmarkRunEcho uses the warm shells.
func BenchmarkRunEcho(b *testing.B) { benchmarkEcho(b, tool.BashArgs{Command: "echo x"}) }

// BenchmarkRunEchoPaused is BenchmarkRunEcho with 20 ms idle (not timed)
// before each call, as an agent that thinks between calls sends them: the
// processes must be woken again.
func BenchmarkRunEchoPaused(b *testing.B) {
	inBothModesBench(b, func(b *testing.B, p *Pool) {
		ctx := context.Background()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			time.Sleep(20 * time.Millisecond)
			b.StartTimer()
			out, err := p.Run(ctx, nil, tool.BashArgs{Command: "echo x"})
			if err != nil || out.Stdout != "x\n" {
				b.Fatalf("run: %v %+v", err, out)
			}
		}
	})
}

// BenchmarkRunColdEcho starts a shell per call (a call with its own working
// directory does), for comparison.
func BenchmarkRunColdEcho(b *testing.B) { benchmarkEcho(b, tool.BashArgs{Command: "echo x", Cwd: "/"}) }

// BenchmarkRunTrueParallel keeps every worker busy with `true` calls, as a
// client that sends many calls at once does: the pool's throughput, less
// the protocol.
func BenchmarkRunTrueParallel(b *testing.B) {
	inBothModesBench(b, func(b *testing.B, p *Pool) {
		ctx := context.Background()
		b.SetParallelism(4) // goroutines per GOMAXPROCS: more callers than workers
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if out, err := p.Run(ctx, nil, tool.BashArgs{Command: "true"}); err != nil || out.ExitCode != 0 {
					b.Errorf("run: %v %+v", err, out)
					return
				}
			}
		})
	})
}
