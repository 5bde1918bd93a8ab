// Command bench measures a boxsh-compatible MCP server through its protocol
// alone.
//
// Since it needs nothing but the protocol, it can compare any two
// implementations, such as this Go one and the C++ reference.
//
// Usage:
//
//	go run ./integration/bench -bin PATH [-label NAME] [-compare PATH2 [-compare-label NAME2]] [-workers 4] [-n 2000] [-paused 100 -pause 20ms] [-churn 10000] [-only NAMES] [-http] [-json]
//	go run ./integration/bench -bin PATH [-compare PATH2] -cold-stages N [-sandbox [-cold-bind SPEC]] [-cold-shell]
//	go run ./integration/bench -bin PATH [-compare PATH2] -start N [-start-each 5] [-bwrap PATH] [-floor]
//	go run ./integration/bench -bin PATH -sandboxes N [-cycles 200] [-first 30] [-workers 1] [-clients 50 [-mixed 10s]]
//	go run ./integration/bench -bin PATH -egress N [-egress-bytes 100000000] [-egress-requests 1000] [-seam-bin PATH]
//
// It spawns `PATH --rpc --workers N` and speaks newline-delimited JSON-RPC
// 2.0 on its stdio: initialize first, then full tools/call requests. It
// measures:
//   - cold start;
//   - sequential round trips, back to back and after an idle pause each
//     (-paused, -pause);
//   - pipelined throughput;
//   - read tool latency;
//   - a large bash output;
//   - idle memory, by process too;
//   - memory once idle again after many calls (-churn);
//   - with -http, the HTTP transport (--listen): round trip, concurrent
//     clients, and the memory of an idle MCP session.
//
// Every answer is checked. What fails is listed as a correctness problem
// and makes the exit status 1. With -compare both binaries take turns per
// measurement, and the table shows them side by side.
//
// With -cold-stages N it only times N cold starts of each binary, with
// BOXSH_TRACE_START set. It prints the median time of each stage the
// processes mark on stderr (see internal/starttrace).
//
// With -egress N it only measures the sandbox's way out in allowlist mode
// (see egress.go): N rounds of a download and small requests from a stand-in
// origin on the loopback, direct and through the proxy, explicit and
// transparent.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	bin := flag.String("bin", "", "boxsh-compatible `binary` to measure (required)")
	label := flag.String("label", "", "column `name` for -bin (default: the path's last two elements)")
	compare := flag.String("compare", "", "second `binary` to measure side by side")
	compareLabel := flag.String("compare-label", "", "column `name` for -compare")
	asJSON := flag.Bool("json", false, "print the figures as JSON instead of a table")
	var c config
	flag.IntVar(&c.Workers, "workers", 4, "value of the servers' --workers")
	flag.IntVar(&c.RoundTrips, "n", 2000, "sequential round trips to time")
	// An agent thinks between its calls: the machine idles, and the
	// server's processes must be woken again.
	flag.IntVar(&c.Paused, "paused", 100, "round trips to time after a pause each")
	flag.DurationVar(&c.Pause, "pause", 20*time.Millisecond, "idle time before each paused round trip")
	flag.IntVar(&c.Warmup, "warmup", 50, "untimed calls before the round trips, reads and pipelined calls")
	flag.IntVar(&c.ColdRuns, "cold", 30, "cold starts to time")
	flag.IntVar(&c.Pipelined, "pipelined", 1500, "calls written at once for the throughput figure")
	flag.IntVar(&c.Reads, "reads", 1000, "read-tool calls to time")
	flag.IntVar(&c.BigRuns, "big", 10, "8 MiB outputs to time")
	flag.IntVar(&c.Churn, "churn", 10000, "calls made between the two memory readings of the memory-after-calls figure")
	flag.BoolVar(&c.Sandbox, "sandbox", false, "run the servers with --sandbox")
	flag.BoolVar(&c.HTTP, "http", false, "also measure the HTTP transport (--listen; boxsh 0.2 on)")
	flag.DurationVar(&c.Timeout, "timeout", time.Minute, "longest wait for any one answer")
	var many sandboxesConfig
	flag.IntVar(&many.Idle, "sandboxes", 0, "instead of the suite, measure a server of many sandboxes (--sandboxes): `N` idle ones for the memory figure, and the first answer and cycles")
	flag.IntVar(&many.Cycles, "cycles", 200, "with -sandboxes: create → call → delete cycles for the leak figure")
	flag.IntVar(&many.First, "first", 30, "with -sandboxes: first answers of new sandboxes to time")
	flag.IntVar(&many.Clients, "clients", 0, "with -sandboxes: `N` clients making mixed calls on N sandboxes, then on one")
	flag.DurationVar(&many.Mixed, "mixed", 10*time.Second, "with -clients: how long each run of mixed calls lasts")
	var sc stagesConfig
	flag.IntVar(&sc.Runs, "cold-stages", 0, "instead of the suite, time `N` cold starts by stage (BOXSH_TRACE_START marks) and print the median of each")
	flag.BoolVar(&sc.Shell, "cold-shell", false, "with -cold-stages: time shell mode (-c 'echo x', to its exit) instead of --rpc")
	var st startConfig
	flag.IntVar(&st.Rounds, "start", 0, "instead of the suite, compare starts (sandboxed and plain shell mode, --rpc --sandbox; beside -compare and bubblewrap) in `N` interleaved rounds")
	flag.IntVar(&st.Each, "start-each", 5, "with -start: starts of each command per round")
	bwrap := flag.String("bwrap", "bwrap", "with -start: the bubblewrap `binary` (looked up on PATH; \"\" for none)")
	floor := flag.Bool("floor", false, "with -start: time the floor of a sandbox's start beside them (integration/bench/lcfloor, built from this checkout, with -bin's boxsh-launch)")
	bind := flag.String("cold-bind", "", "with -cold-stages and -sandbox: a --bind `SPEC` for the sandbox")
	var ec egressConfig
	flag.IntVar(&ec.Rounds, "egress", 0, "instead of the suite, measure `N` rounds of egress: a download and small requests from a loopback origin, direct and through the proxy (explicit and transparent)")
	flag.Int64Var(&ec.Bytes, "egress-bytes", 100_000_000, "with -egress: the size of the download in `bytes`")
	flag.IntVar(&ec.Requests, "egress-requests", 1000, "with -egress: small requests per way and round")
	flag.StringVar(&ec.SeamBin, "seam-bin", "", "with -egress: a test-seam build of boxsh (`path`; -tags seccomp,boxsh_testseam, beside -bin's boxsh-init and boxsh-launch); built from this checkout when empty")
	egressWaysFlag := flag.String("egress-ways", "", "with -egress: comma-separated `ways` to measure (default all: "+strings.Join(egressWays, ", ")+")")
	only := flag.String("only", "", "comma-separated `names` of the measurements to run (default all: "+strings.Join(measurementNames(), ", ")+")")
	flag.Parse()
	if *egressWaysFlag != "" {
		ec.Ways = strings.Split(*egressWaysFlag, ",")
	}
	if *bind != "" {
		sc.Binds = []string{*bind}
	}

	targets, err := targetsFromFlags(*bin, *label, *compare, *compareLabel)
	if err == nil {
		err = validate(c)
	}
	if err == nil && *only != "" {
		c.Only, err = selectMeasurements(*only)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		flag.Usage()
		os.Exit(2)
	}

	if ec.Rounds > 0 {
		ec.Timeout = c.Timeout
		if _, err := runEgress(os.Stdout, targets[0].Bin, ec); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if many.Idle > 0 {
		if err := runSandboxes(os.Stdout, targets[0].Bin, c, many); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if st.Rounds > 0 {
		if *bwrap != "" {
			if p, err := exec.LookPath(*bwrap); err == nil {
				st.Bwrap = p
			}
		}
		st.Floor = *floor
		if err := runStart(os.Stdout, targets, c, st); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if sc.Runs > 0 {
		if err := runColdStages(os.Stdout, targets, c, sc); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	r := report{Config: c, LoadBefore: loadAverage(), Results: targets}
	runSuite(targets, c, os.Stderr)
	r.LoadAfter = loadAverage()
	if *asJSON {
		if err := writeJSON(os.Stdout, r); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	} else {
		writeTable(os.Stdout, r)
	}
	for _, t := range targets {
		if len(t.Problems) > 0 {
			os.Exit(1)
		}
	}
}

// targetsFromFlags builds the targets named on the command line, checking
// that the binaries are executable.
func targetsFromFlags(bin, label, compare, compareLabel string) ([]*target, error) {
	if bin == "" {
		return nil, errors.New("-bin is required")
	}
	var targets []*target
	for _, p := range [][2]string{{bin, label}, {compare, compareLabel}} {
		path, name := p[0], p[1]
		if path == "" {
			continue
		}
		abs, err := executable(path)
		if err != nil {
			return nil, err
		}
		if name == "" {
			name = shortName(path)
		}
		targets = append(targets, newTarget(name, abs))
	}
	if len(targets) == 2 && targets[0].Label == targets[1].Label {
		targets[0].Label += "(A)"
		targets[1].Label += "(B)"
	}
	return targets, nil
}

// executable resolves path to an absolute path of an executable file.
func executable(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if _, err := exec.LookPath(abs); err != nil {
		return "", err
	}
	return abs, nil
}

// shortName is the last two elements of path, e.g. "bin/boxsh".
func shortName(path string) string {
	clean := filepath.Clean(path)
	return filepath.Join(filepath.Base(filepath.Dir(clean)), filepath.Base(clean))
}

// validate rejects workloads too small to measure.
func validate(c config) error {
	for name, v := range map[string]int{
		"-workers": c.Workers, "-n": c.RoundTrips, "-paused": c.Paused, "-cold": c.ColdRuns,
		"-pipelined": c.Pipelined, "-reads": c.Reads, "-big": c.BigRuns, "-churn": c.Churn,
	} {
		if v < 1 {
			return fmt.Errorf("%s must be at least 1", name)
		}
	}
	if c.Warmup < 0 || c.Pause < 0 || c.Timeout <= 0 {
		return errors.New("-warmup and -pause must not be negative and -timeout must be positive")
	}
	return nil
}

// loadAverage is the 1, 5 and 15 minute load average, to judge noise.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
