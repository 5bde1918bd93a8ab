package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/boxsh/boxsh/internal/starttrace"
)

func TestReadMarks(t *testing.T) {
	begin := time.Unix(100, 0)
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "some log line\n%sfront.main %d\n%sinit.main %d\n%sfront.main %d\n",
		starttrace.Prefix, begin.Add(3*time.Millisecond).UnixNano(),
		starttrace.Prefix, begin.Add(9*time.Millisecond).UnixNano(),
		starttrace.Prefix, begin.Add(20*time.Millisecond).UnixNano())
	r, err := readMarks(f, begin)
	if err != nil {
		t.Fatal(err)
	}
	if r["front.main"] != 3*time.Millisecond || r["init.main"] != 9*time.Millisecond || len(r) != 2 {
		t.Errorf("marks = %v, want front.main 3ms (the first) and init.main 9ms", r)
	}
	if _, err := readMarks(f, begin); err != nil {
		t.Errorf("a second read: %v", err)
	}
	empty, _ := os.CreateTemp(t.TempDir(), "stderr")
	defer empty.Close()
	if _, err := readMarks(empty, begin); err == nil {
		t.Error("no marks: want an error")
	}
}

func TestWriteStages(t *testing.T) {
	ms := time.Millisecond
	runs := []stageRun{
		{"front.main": 3 * ms, "init.main": 10 * ms, stageAnswer: 12 * ms},
		{"front.main": 5 * ms, "init.main": 11 * ms, stageAnswer: 15 * ms},
	}
	var b bytes.Buffer
	writeStages(&b, runs)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, want := range []string{"front.main", "init.main", "answer"} {
		if f := strings.Fields(lines[i+1]); f[0] != want {
			t.Errorf("row %d is %q, want %s first", i+1, lines[i+1], want)
		}
	}
	// init.main's steps are 7 and 6 ms: median (nearest rank) 6.
	if f := strings.Fields(lines[2]); f[1] != "6.00" || f[2] != "6.00–7.00" {
		t.Errorf("init.main row %q: want step median 6.00, range 6.00–7.00", lines[2])
	}
}
