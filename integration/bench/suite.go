package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const (
	// bigBytes is the stdout size of the large-output measurement.
	bigBytes = 8 << 20
	// exitLimit bounds the wait for a server to exit after stdin closes.
	exitLimit = 10 * time.Second
	// idlePause is how long a server idles before its memory is read:
	// long enough for one that returns memory once idle a while (boxsh
	// does after 1 s) to have done so.
	idlePause = 2 * time.Second
	// idleCalls is how many calls precede the idle memory reading.
	idleCalls = 5
	// smallFileBytes is the size of the file the read measurement reads.
	smallFileBytes = 1024
)

// bigCommand prints bigBytes bytes of 'A'.
var bigCommand = fmt.Sprintf("head -c %d /dev/zero | tr '\\0' A", bigBytes)

// config is the workload of one bench run.
type config struct {
	Workers    int `json:"workers"`
	ColdRuns   int `json:"cold_runs"`
	Warmup     int `json:"warmup"`
	RoundTrips int `json:"round_trips"`
	// Paused round trips each follow a pause, as a client's calls do
	// while it thinks between them.
	Paused    int           `json:"paused_round_trips"`
	Pause     time.Duration `json:"pause_ns"`
	Pipelined int           `json:"pipelined"`
	Reads     int           `json:"reads"`
	BigRuns   int           `json:"big_runs"`
	// Churn is how many calls the memory-after-calls figure makes.
	Churn int `json:"churn_calls"`
	// Sandbox runs the servers with --sandbox (the read bench binds its
	// directory read-only).
	Sandbox bool `json:"sandbox"`
	// HTTP adds the measurements of the HTTP transport.
	HTTP    bool          `json:"http"`
	Timeout time.Duration `json:"-"`
	// Only, when not empty, names the measurements to run.
	Only map[string]bool `json:"only,omitempty"`
}

// serverArgs are the arguments of a server for c, with extra binds.
func (c config) serverArgs(binds ...string) []string {
	args := []string{"--rpc", "--workers", fmt.Sprint(c.Workers)}
	if c.Sandbox {
		args = append(args, "--sandbox")
		for _, b := range binds {
			args = append(args, "--bind", b)
		}
	}
	return args
}

// target is one binary under test and what was measured on it.
type target struct {
	Label string `json:"label"`
	Bin   string `json:"bin"`
	// Server is the serverInfo of its initialize answer.
	Server  string             `json:"server"`
	Metrics map[string]float64 `json:"metrics"`
	// Problems are the correctness problems noticed while measuring.
	Problems []string `json:"problems"`
	// Notes are details of the figures (memory by process, say).
	Notes []string `json:"notes,omitempty"`
}

// newTarget prepares a target with no measurements yet.
func newTarget(label, bin string) *target {
	return &target{Label: label, Bin: bin, Metrics: map[string]float64{}, Problems: []string{}}
}

// set records one metric.
func (t *target) set(key string, v float64) { t.Metrics[key] = v }

// problem records a correctness problem.
func (t *target) problem(format string, args ...any) {
	t.Problems = append(t.Problems, fmt.Sprintf(format, args...))
}

// measurement is one part of the suite.
type measurement struct {
	name string
	run  func(t *target, c config) error
}

// suite lists the measurements in the order they run.
var suite = []measurement{
	{"cold start", measureColdStart},
	{"round trip", measureRoundTrip},
	{"paused round trip", measurePausedRoundTrip},
	{"throughput", measureThroughput},
	{"read", measureRead},
	{"8 MiB output", measureBigOutput},
	{"idle memory", measureIdleMemory},
	{"memory after calls", measureChurnMemory},
}

// measurementNames lists the names of every measurement, for -only.
func measurementNames() []string {
	var names []string
	for _, m := range append(append([]measurement{}, suite...), httpSuite...) {
		names = append(names, m.name)
	}
	return names
}

// selectMeasurements parses -only: measurement names separated by commas.
func selectMeasurements(list string) (map[string]bool, error) {
	known := measurementNames()
	only := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("-only: unknown measurement %q (known: %s)", name, strings.Join(known, ", "))
		}
		only[name] = true
	}
	return only, nil
}

// runSuite runs every measurement on every target. Targets take turns per
// measurement so that a change in machine load affects them alike.
func runSuite(targets []*target, c config, progress io.Writer) {
	all := suite
	if c.HTTP {
		all = append(append([]measurement{}, suite...), httpSuite...)
	}
	for _, m := range all {
		if len(c.Only) > 0 && !c.Only[m.name] {
			continue
		}
		for _, t := range targets {
			fmt.Fprintf(progress, "bench: %s: %s\n", t.Label, m.name)
			if err := m.run(t, c); err != nil {
				t.problem("%s: %v", m.name, err)
			}
		}
	}
}

// tally counts failed checks of one measurement and keeps the first failure.
type tally struct {
	total, failed int
	first         error
}

// check counts one check; err is its failure or nil.
func (ty *tally) check(err error) {
	ty.total++
	if err != nil {
		ty.failed++
		if ty.first == nil {
			ty.first = err
		}
	}
}

// report records the failures, if any, as a problem of t.
func (ty *tally) report(t *target, what string) {
	if ty.failed > 0 {
		t.problem("%s: %d of %d checks failed, first: %v", what, ty.failed, ty.total, ty.first)
	}
}

// session starts a server for t, performs the handshake, runs fn on it and
// shuts it down. Unexpected messages and an unclean exit become problems.
func session(t *target, c config, what string, fn func(s *server) error, binds ...string) error {
	s, err := startServer(t.Bin, c.serverArgs(binds...), c.Timeout)
	if err != nil {
		return err
	}
	defer reportStrays(t, what, s)
	if err := s.initialize(); err != nil {
		s.abort()
		return err
	}
	t.Server = s.info
	if err := fn(s); err != nil {
		s.abort()
		return err
	}
	if _, err := s.shutdown(exitLimit); err != nil {
		t.problem("%s: %v", what, err)
	}
	return nil
}

// reportStrays records the messages s got that answered nothing asked.
func reportStrays(t *target, what string, s *server) {
	if len(s.strays) > 0 {
		t.problem("%s: %d unexpected messages, first: %s", what, len(s.strays), s.strays[0])
	}
}

// timedCall sends one tools/call and times it from just before the write
// until its answer line has arrived. The line is valid until the next read.
func timedCall(s *server, tool string, args any) (time.Duration, []byte, error) {
	id := s.id()
	req := toolCall(id, tool, args)
	start := time.Now()
	if err := s.send(req); err != nil {
		return 0, nil, err
	}
	line, err := s.await(id)
	if err != nil {
		return 0, nil, err
	}
	return s.arrived.Sub(start), line, nil
}

// warmUp makes n sequential `echo x` calls, checking each answer.
func warmUp(s *server, n int, checks *tally) error {
	for range n {
		line, err := s.call("bash", bashArgs("echo x"))
		if err != nil {
			return err
		}
		checks.check(checkBash(line, "x\n"))
	}
	return nil
}

// measureColdStart times spawn-to-first-answer on fresh servers, and how
// long each takes to exit once its stdin is closed.
func measureColdStart(t *target, c config) error {
	var starts, exits sample
	var answers, exitChecks tally
	for range c.ColdRuns {
		start, exit, err := coldStart(t, c, &answers, &exitChecks)
		if err != nil {
			return err
		}
		starts = append(starts, start)
		exits = append(exits, exit)
	}
	answers.report(t, "cold start")
	exitChecks.report(t, "cold start exit")
	t.set("cold_start_median_ms", ms(starts.median()))
	t.set("cold_start_p90_ms", ms(starts.percentile(90)))
	t.set("exit_median_ms", ms(exits.median()))
	return nil
}

// coldStart spawns a server and at once writes initialize, the initialized
// notification and a bash `echo x` call, without waiting in between. It
// returns the time from spawning to the bash answer, and from closing stdin
// to the process exit.
func coldStart(t *target, c config, answers, exitChecks *tally) (start, exit time.Duration, err error) {
	begin := time.Now()
	s, err := startServer(t.Bin, c.serverArgs(), c.Timeout)
	if err != nil {
		return 0, 0, err
	}
	defer reportStrays(t, "cold start", s)
	if err := s.send(append(initRequests(0), toolCall(1, "bash", bashArgs("echo x"))...)); err != nil {
		s.abort()
		return 0, 0, err
	}
	for start == 0 {
		line, id, hasID, err := s.next()
		switch {
		case err != nil:
			s.abort()
			return 0, 0, err
		case hasID && id == 0:
			if err := s.noteInfo(line); err != nil {
				s.abort()
				return 0, 0, err
			}
			t.Server = s.info
		case hasID && id == 1:
			start = s.arrived.Sub(begin)
			answers.check(checkBash(line, "x\n"))
		default:
			s.stray(line)
		}
	}
	exit, err = s.shutdown(exitLimit)
	exitChecks.check(err)
	return start, exit, nil
}

// measureRoundTrip times sequential bash `echo x` calls on one server, each
// sent once the previous answer arrived.
func measureRoundTrip(t *target, c config) error {
	return roundTrips(t, c, "round trip", c.RoundTrips, 0, "rtt")
}

// measurePausedRoundTrip times `echo x` calls, each made c.Pause after the
// previous answer. The machine goes idle between calls, as it does under a
// client that thinks between them, and the processes must be woken again.
func measurePausedRoundTrip(t *target, c config) error {
	return roundTrips(t, c, "paused round trip", c.Paused, c.Pause, "paused_rtt")
}

// roundTrips times n sequential `echo x` calls, each after pause, and sets
// the figures KEY_median_ms, KEY_p90_ms and KEY_p99_ms.
func roundTrips(t *target, c config, name string, n int, pause time.Duration, key string) error {
	return session(t, c, name, func(s *server) error {
		var answers tally
		if err := warmUp(s, c.Warmup, &answers); err != nil {
			return err
		}
		lat := make(sample, 0, n)
		for range n {
			time.Sleep(pause)
			d, line, err := timedCall(s, "bash", bashArgs("echo x"))
			if err != nil {
				return err
			}
			lat = append(lat, d)
			answers.check(checkBash(line, "x\n"))
		}
		answers.report(t, name)
		t.set(key+"_median_ms", ms(lat.median()))
		t.set(key+"_p90_ms", ms(lat.percentile(90)))
		t.set(key+"_p99_ms", ms(lat.percentile(99)))
		return nil
	})
}

// measureThroughput writes c.Pipelined bash `true` calls at once and reads
// all answers, timing from the first write to the last answer.
func measureThroughput(t *target, c config) error {
	return session(t, c, "throughput", func(s *server) error {
		var answers tally
		if err := warmUp(s, c.Warmup, &answers); err != nil {
			return err
		}
		first := s.nextID
		var batch []byte
		for range c.Pipelined {
			batch = append(batch, toolCall(s.id(), "bash", bashArgs("true"))...)
		}
		start := time.Now()
		sent := make(chan error, 1)
		go func() { sent <- s.send(batch) }()
		lines := make([][]byte, 0, c.Pipelined)
		for len(lines) < c.Pipelined {
			line, err := s.readLine()
			if err != nil {
				return fmt.Errorf("after %d of %d answers: %v", len(lines), c.Pipelined, err)
			}
			if !isNotification(line) {
				lines = append(lines, bytes.Clone(line))
			}
		}
		total := s.arrived.Sub(start)
		if err := <-sent; err != nil {
			return err
		}
		distinct := checkBatch(lines, first, &answers)
		answers.report(t, "throughput")
		if distinct != c.Pipelined {
			t.problem("throughput: %d distinct ids answered, want %d", distinct, c.Pipelined)
		}
		t.set("pipelined_total_ms", ms(total))
		t.set("pipelined_calls_per_s", float64(c.Pipelined)/total.Seconds())
		t.set("pipelined_distinct_ids", float64(distinct))
		return nil
	})
}

// checkBatch checks the answers to a batch whose ids are first, first+1, …,
// first+len(lines)-1: each answered once with a successful, empty bash
// result. It returns how many distinct ids of the batch were answered.
func checkBatch(lines [][]byte, first int, answers *tally) int {
	seen := map[int]bool{}
	for _, line := range lines {
		id, ok := answerID(line)
		switch {
		case !ok || id < first || id >= first+len(lines):
			answers.check(fmt.Errorf("answer to an id not asked: %s", clip(string(line), 200)))
		case seen[id]:
			answers.check(fmt.Errorf("id %d answered twice", id))
		default:
			seen[id] = true
			answers.check(checkBash(line, ""))
		}
	}
	return len(seen)
}

// measureRead times sequential read-tool calls on a small text file.
func measureRead(t *target, c config) error {
	dir, err := os.MkdirTemp("", "boxsh-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "small.txt")
	text := smallText(smallFileBytes)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	return session(t, c, "read", func(s *server) error {
		var answers tally
		lat := make(sample, 0, c.Reads)
		for i := range c.Warmup + c.Reads {
			d, line, err := timedCall(s, "read", readArgs(path))
			if err != nil {
				return err
			}
			if i >= c.Warmup {
				lat = append(lat, d)
			}
			answers.check(checkRead(line, text))
		}
		answers.report(t, "read")
		t.set("read_median_ms", ms(lat.median()))
		t.set("read_p99_ms", ms(lat.percentile(99)))
		return nil
	}, "ro:"+dir)
}

// smallText is n bytes (n a multiple of 64) of numbered 64-byte lines.
func smallText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%-63s\n", fmt.Sprintf("line %d: the quick brown fox jumps over the lazy dog", i))
	}
	return b.String()
}

// measureBigOutput times bash calls printing bigBytes bytes until the whole
// answer has arrived, after one untimed warm-up call.
func measureBigOutput(t *target, c config) error {
	return session(t, c, "8 MiB output", func(s *server) error {
		var answers tally
		var times sample
		size := 0
		for i := range 1 + c.BigRuns {
			d, line, err := timedCall(s, "bash", bashArgs(bigCommand))
			if err != nil {
				return err
			}
			if i > 0 {
				times = append(times, d)
			}
			size = len(line)
			answers.check(checkFill(line, bigBytes, 'A'))
		}
		answers.report(t, "8 MiB output")
		t.set("big_output_median_ms", ms(times.median()))
		t.set("big_answer_mb", float64(size)/1e6)
		return nil
	})
}

// measureIdleMemory reads the memory of a server's process tree after a few
// calls and a pause, alone and beside a second server.
func measureIdleMemory(t *target, c config) error {
	evictPageCache(t.Bin)
	return session(t, c, "idle memory", func(s *server) error {
		m, err := idleTree(t, s, s, "idle memory")
		if err != nil {
			return err
		}
		t.set("idle_rss_mb", float64(m.RSSKiB)/1024)
		if m.PSSKiB >= 0 {
			t.set("idle_pss_mb", float64(m.PSSKiB)/1024)
		}
		t.set("idle_procs", float64(m.Procs))
		if len(m.ByProc) > 0 {
			t.set("idle_rss_root_mb", float64(m.ByProc[0].RSSKiB)/1024)
		}
		t.set("idle_anon_mb", float64(m.anonKiB())/1024)
		t.set("idle_shmem_mb", float64(m.shmemKiB())/1024)
		t.Notes = append(t.Notes, "idle memory by process, RSS (anon) MiB: "+m.breakdown())
		// A second server beside the first shares its programs' pages, so
		// the first tree's PSS falls to what each server adds: its own
		// pages, and any copy of a program it alone holds.
		return session(t, c, "idle memory beside another", func(other *server) error {
			m, err := idleTree(t, other, s, "idle memory beside another")
			if err == nil && m.PSSKiB >= 0 {
				t.set("idle_pss_pair_mb", float64(m.PSSKiB)/1024)
			}
			return err
		})
	})
}

// idleTree makes a few calls to the server warm, pauses, and reads the
// memory of the process tree of the server measured.
func idleTree(t *target, warm, measured *server, what string) (treeMemory, error) {
	var answers tally
	if err := warmUp(warm, idleCalls, &answers); err != nil {
		return treeMemory{}, err
	}
	answers.report(t, what)
	time.Sleep(idlePause)
	return measureTree(measured.pid())
}

// measureChurnMemory reads the memory of a server's idle process tree, makes
// c.Churn `echo x` calls (pipelined, churnBatch at a time) and reads it
// again once idle: what the calls leave behind.
func measureChurnMemory(t *target, c config) error {
	evictPageCache(t.Bin)
	return session(t, c, "memory after calls", func(s *server) error {
		var answers tally
		if err := warmUp(s, idleCalls, &answers); err != nil {
			return err
		}
		time.Sleep(idlePause)
		before, err := measureTree(s.pid())
		if err != nil {
			return err
		}
		for done := 0; done < c.Churn; {
			n := min(churnBatch, c.Churn-done)
			if err := pipelined(s, n, "echo x", "x\n", &answers); err != nil {
				return err
			}
			done += n
		}
		answers.report(t, "memory after calls")
		time.Sleep(idlePause)
		after, err := measureTree(s.pid())
		if err != nil {
			return err
		}
		t.set("churn_idle_rss_mb", float64(before.RSSKiB)/1024)
		t.set("churn_after_rss_mb", float64(after.RSSKiB)/1024)
		t.set("churn_growth_pct", 100*float64(after.RSSKiB-before.RSSKiB)/float64(before.RSSKiB))
		t.Notes = append(t.Notes, fmt.Sprintf("memory after %d calls by process, RSS (anon) MiB: %s", c.Churn, after.breakdown()))
		return churnAfterLongIdle(t, s, before)
	})
}

// churnBatch is how many calls measureChurnMemory writes at once.
const churnBatch = 500

// pipelined writes n bash calls of command at once and checks that each
// is answered once with stdout want.
func pipelined(s *server, n int, command, want string, answers *tally) error {
	first := s.nextID
	var batch []byte
	for range n {
		batch = append(batch, toolCall(s.id(), "bash", bashArgs(command))...)
	}
	sent := make(chan error, 1)
	go func() { sent <- s.send(batch) }()
	seen := map[int]bool{}
	for len(seen) < n {
		line, err := s.readLine()
		if err != nil {
			return fmt.Errorf("after %d of %d answers: %v", len(seen), n, err)
		}
		if isNotification(line) {
			continue
		}
		id, ok := answerID(line)
		if !ok || id < first || id >= first+n || seen[id] {
			return fmt.Errorf("unexpected answer: %s", clip(string(line), 200))
		}
		seen[id] = true
		answers.check(checkBash(line, want))
	}
	return <-sent
}
