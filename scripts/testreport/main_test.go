package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run feeds events to a report as `go test -json` would and returns what it
// printed.
func run(t *testing.T, verbose bool, events ...event) (string, *report) {
	t.Helper()
	var out bytes.Buffer
	r := newReport(&out, verbose)
	for _, e := range events {
		b, err := json.Marshal(e)
		require.NoError(t, err)
		var back event
		require.NoError(t, json.Unmarshal(b, &back))
		r.add(back)
	}
	r.close()
	return out.String(), r
}

const pkg = "github.com/boxsh/boxsh/integration"

func testEvents(name, action string, lines ...string) []event {
	es := []event{{Action: "run", Package: pkg, Test: name}}
	for _, l := range append([]string{"=== RUN   " + name + "\n"}, lines...) {
		es = append(es, event{Action: "output", Package: pkg, Test: name, Output: l})
	}
	return append(es, event{Action: action, Package: pkg, Test: name})
}

func TestReportCountsAndNamesSkips(t *testing.T) {
	var es []event
	es = append(es, testEvents("TestA", "pass", "--- PASS: TestA (0.00s)\n")...)
	es = append(es, testEvents("TestB", "skip", "    sandbox_test.go:25: needs runc\n", "--- SKIP: TestB (0.00s)\n")...)
	es = append(es, testEvents("TestC", "skip", "    x_test.go:9: needs runc\n", "--- SKIP: TestC (0.00s)\n")...)
	es = append(es, testEvents("TestD", "skip", "--- SKIP: TestD (0.00s)\n")...)
	es = append(es, event{Action: "output", Package: pkg, Output: "PASS\n"},
		event{Action: "output", Package: pkg, Output: "ok  \t" + pkg + "\t0.1s\n"},
		event{Action: "pass", Package: pkg})
	out, r := run(t, false, es...)
	assert.Equal(t, 1, r.passed)
	assert.False(t, r.broken)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Equal(t, "tests: 1 passed, 0 failed, 3 skipped", lines[len(lines)-1])
	assert.Contains(t, out, "  2: needs runc (integration.TestB, integration.TestC)\n")
	assert.Contains(t, out, "  1: (no reason given) (integration.TestD)\n")
	assert.Contains(t, out, "ok  \t"+pkg)
	assert.NotContains(t, out, "--- PASS", "a passing test's output is dropped unless verbose")
	assert.NotContains(t, out, "PASS\n\n")
}

func TestReportPrintsFailuresAndVerbose(t *testing.T) {
	es := testEvents("TestE", "fail", "    e_test.go:3: boom\n", "--- FAIL: TestE (0.00s)\n")
	es = append(es, testEvents("TestF", "pass", "--- PASS: TestF (0.00s)\n")...)
	es = append(es, event{Action: "fail", Package: pkg})
	out, r := run(t, false, es...)
	assert.Equal(t, 1, r.failed)
	assert.True(t, r.broken)
	assert.Contains(t, out, "    e_test.go:3: boom\n--- FAIL: TestE")
	assert.NotContains(t, out, "TestF")
	assert.True(t, strings.HasSuffix(out, "tests: 1 passed, 1 failed, 0 skipped\n"))

	out, _ = run(t, true, es...)
	assert.Contains(t, out, "--- PASS: TestF")
}

func TestReportFlushesTestsAPanicEnded(t *testing.T) {
	es := []event{
		{Action: "run", Package: pkg, Test: "TestG"},
		{Action: "output", Package: pkg, Test: "TestG", Output: "panic: test timed out\n"},
		{Action: "output", Package: pkg, Output: "FAIL\t" + pkg + "\t600s\n"},
		{Action: "fail", Package: pkg},
	}
	out, r := run(t, false, es...)
	assert.True(t, r.broken)
	assert.Contains(t, out, "panic: test timed out")
}

func TestReportBuildFailure(t *testing.T) {
	out, r := run(t, false,
		event{Action: "build-output", ImportPath: pkg, Output: "x.go:1: syntax error\n"},
		event{Action: "build-fail", ImportPath: pkg})
	assert.True(t, r.broken)
	assert.Contains(t, out, "syntax error")
}

// TestReportNamesTheSlowest checks that the report names the slowest
// top-level tests, longest first. Subtests, skips and tests under a second
// are left aside.
func TestReportNamesTheSlowest(t *testing.T) {
	var es []event
	for name, took := range map[string]float64{"TestA": 3, "TestB": 92, "TestB/sub": 90, "TestC": 0.4} {
		e := testEvents(name, "pass")
		e[len(e)-1].Elapsed = took
		es = append(es, e...)
	}
	es = append(es, testEvents("TestD", "skip")...)
	out, _ := run(t, false, es...)
	assert.Contains(t, out, "slowest: integration.TestB 92s, integration.TestA 3s\n")
}
