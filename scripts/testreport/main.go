// Command testreport summarises `go test -json` so that a green run never
// hides a skipped test.
//
// It reads `go test -json` on standard input and prints what `go test`
// would print: every line with -v, else the packages and the output of
// failed tests. It then prints a count of passed, failed and skipped
// tests, with the reasons for the skips. It exits 1 when a test or a build
// failed.
//
//	go test -json ./... | go run ./scripts/testreport [-v]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64 // seconds, on pass and fail
	ImportPath string  // build-output and build-fail
}

// skipLine is t.Skip's message line: "    file_test.go:25: reason".
var skipLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: (.*)$`)

// report counts tests and keeps the output of each running test until it
// passes (dropped unless verbose) or fails (printed).
type report struct {
	out     io.Writer
	verbose bool

	pending map[string][]string // package + "\x00" + test → output lines
	passed  int
	failed  int
	broken  bool                // a package or a build failed
	skipped map[string][]string // reason → tests
	// took is how long each top-level test that ended took, in seconds.
	took map[string]float64
}

func newReport(out io.Writer, verbose bool) *report {
	return &report{out: out, verbose: verbose, pending: map[string][]string{}, skipped: map[string][]string{}, took: map[string]float64{}}
}

func (r *report) add(e event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
	case "build-fail":
		r.broken = true
	case "output":
		if r.verbose {
			fmt.Fprint(r.out, e.Output)
		}
		if e.Test == "" {
			if !r.verbose && e.Output != "PASS\n" {
				fmt.Fprint(r.out, e.Output)
			}
			return
		}
		r.pending[key] = append(r.pending[key], e.Output)
	case "pass", "fail", "skip":
		lines := r.pending[key]
		delete(r.pending, key)
		if e.Test == "" {
			if e.Action == "fail" {
				r.broken = true
				r.flush(e.Package)
			}
			return
		}
		if e.Action != "skip" && !strings.Contains(e.Test, "/") {
			r.took[strings.TrimPrefix(e.Package, "github.com/boxsh/boxsh/")+"."+e.Test] = e.Elapsed
		}
		switch e.Action {
		case "pass":
			r.passed++
		case "fail":
			r.failed++
			if !r.verbose {
				fmt.Fprint(r.out, strings.Join(lines, ""))
			}
		case "skip":
			name := strings.TrimPrefix(e.Package, "github.com/boxsh/boxsh/") + "." + e.Test
			r.skipped[skipReason(lines)] = append(r.skipped[skipReason(lines)], name)
		}
	}
}

// flush prints the output of pkg's tests that never ended (a panic or a
// time-out ended the test binary), in the order they were started.
func (r *report) flush(pkg string) {
	keys := make([]string, 0)
	for key := range r.pending {
		if strings.HasPrefix(key, pkg+"\x00") {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		if !r.verbose {
			fmt.Fprint(r.out, strings.Join(r.pending[key], ""))
		}
		delete(r.pending, key)
	}
}

// skipReason is the last message a skipped test logged, or a placeholder.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if m := skipLine.FindStringSubmatch(strings.TrimRight(lines[i], "\n")); m != nil {
			return m[1]
		}
	}
	return "(no reason given)"
}

// close prints the skips by reason, most frequent first, then the count line.
func (r *report) close() {
	n := 0
	reasons := make([]string, 0, len(r.skipped))
	for reason, tests := range r.skipped {
		n += len(tests)
		reasons = append(reasons, reason)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, b := r.skipped[reasons[i]], r.skipped[reasons[j]]
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return reasons[i] < reasons[j]
	})
	if n > 0 {
		fmt.Fprintf(r.out, "\n%d skipped, by reason:\n", n)
		for _, reason := range reasons {
			tests := r.skipped[reason]
			sort.Strings(tests)
			shown := tests
			if len(shown) > 4 {
				shown = append(shown[:4:4], fmt.Sprintf("and %d more", len(tests)-4))
			}
			fmt.Fprintf(r.out, "  %d: %s (%s)\n", len(tests), reason, strings.Join(shown, ", "))
		}
	}
	if slow := r.slowest(5); slow != "" {
		fmt.Fprintf(r.out, "slowest: %s\n", slow)
	}
	fmt.Fprintf(r.out, "tests: %d passed, %d failed, %d skipped\n", r.passed, r.failed, n)
}

// slowest names the n top-level tests that took longest, of those that
// took a second or more, with their times ("integration.TestX 92s, ...").
func (r *report) slowest(n int) string {
	names := make([]string, 0, len(r.took))
	for name, took := range r.took {
		if took >= 1 {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if r.took[names[i]] != r.took[names[j]] {
			return r.took[names[i]] > r.took[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for _, name := range names[:min(n, len(names))] {
		parts = append(parts, fmt.Sprintf("%s %.0fs", name, r.took[name]))
	}
	return strings.Join(parts, ", ")
}

func main() {
	verbose := flag.Bool("v", false, "print every test's output, as go test -v")
	flag.Parse()
	r := newReport(os.Stdout, *verbose)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// go test writes some lines that are not JSON (a build
			// error before test2json, say): pass them on.
			fmt.Println(sc.Text())
			continue
		}
		r.add(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "testreport: reading go test -json: %v\n", err)
		os.Exit(1)
	}
	r.close()
	if r.failed > 0 || r.broken {
		os.Exit(1)
	}
}
