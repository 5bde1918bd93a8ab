package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxsh/boxsh/internal/tool"
)

// BenchmarkReadSmallText reads a 1 KiB text file, the read tool's common
// case, less the protocol.
func BenchmarkReadSmallText(b *testing.B) {
	path := filepath.Join(b.TempDir(), "small.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog 0123456789abcdefghij\n", 16)), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := Read(ctx, tool.ReadArgs{Path: path}); r.IsError {
			b.Fatalf("read: %+v", r)
		}
	}
}
