package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchEgress runs a small egress workload against the built binaries
// (BOXSH_BIN_DIR, which `just test` sets): every way's figures come out,
// and the body arrived whole each time (runEgress checks its length and
// checksum).
func TestBenchEgress(t *testing.T) {
	dir := os.Getenv("BOXSH_BIN_DIR")
	if dir == "" {
		t.Skip("BOXSH_BIN_DIR is not set: run `just test ./integration/bench`")
	}
	if os.Geteuid() == 0 {
		t.Skip("sandbox tests never run as real root: run `just test`, which runs them as an unprivileged user")
	}
	ec := egressConfig{Rounds: 2, Bytes: 3_000_001, Requests: 20, Timeout: time.Minute}
	var out bytes.Buffer
	res, err := runEgress(&out, filepath.Join(dir, "boxsh"), ec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	for _, way := range egressWays {
		rounds := res[way]
		if len(rounds) != ec.Rounds {
			t.Fatalf("%s: %d rounds, want %d", way, len(rounds), ec.Rounds)
		}
		for _, r := range rounds {
			if r.Download <= 0 || len(r.Small) != ec.Requests {
				t.Errorf("%s: download %v, %d small requests", way, r.Download, len(r.Small))
			}
		}
		if !strings.Contains(out.String(), "\n"+way+" ") {
			t.Errorf("no row for %s in\n%s", way, out.String())
		}
	}
}

func TestParseProbe(t *testing.T) {
	r, err := parseProbe("download 10 0000abcd 5000\nsmall 1 2 3\n", 10, 0xabcd)
	if err != nil || r.Download != 5000 || len(r.Small) != 3 || r.Small[2] != 3 {
		t.Fatalf("parseProbe = %+v, %v", r, err)
	}
	if _, err := parseProbe("download 9 0000abcd 5000\n", 10, 0xabcd); err == nil {
		t.Error("a short body: want an error")
	}
	if _, err := parseProbe("download 10 0000abce 5000\n", 10, 0xabcd); err == nil {
		t.Error("a wrong checksum: want an error")
	}
	if _, err := parseProbe("small 1\n", 10, 0xabcd); err == nil {
		t.Error("no download: want an error")
	}
}
