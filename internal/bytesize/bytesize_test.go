package bytesize

import (
	"math"
	"testing"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{100, "100 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{2048, "2 KiB"},
		{12595, "12.3 KiB"},
		{24 << 20, "24 MiB"},
		{512<<20 + 512<<10, "512.5 MiB"},
		{3 << 30, "3 GiB"},
		{3<<30 + 3<<29, "4.5 GiB"},
		{5 << 40, "5 TiB"},
		{1 << 50, "1 PiB"},
		{1 << 60, "1 EiB"},
		{math.MaxInt64, "8 EiB"},
	} {
		if got := Format(c.n); got != c.want {
			t.Errorf("Format(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
