package bash

import (
	"context"
	"testing"
	"time"
	"sort"

	"github.com/boxsh/boxsh/tool"
)

func TestPhases(t *testing.T) {
	p, _ := NewPool(Options{Workers: 4})
	defer p.Close()
	ctx := context.Background()
	var ds []time.Duration
	for i := 0; i < 300; i++ {
		time.Sleep(3 * time.Millisecond)
		t0 := time.Now()
		p.Run(ctx, nil, tool.BashArgs{Command: "echo x"})
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	t.Logf("idle-spaced median %v p90 %v", ds[150], ds[270])
}
