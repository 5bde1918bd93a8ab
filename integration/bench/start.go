package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// The start comparison (-start N): how long a start of -bin takes beside
// the same start of -compare (the original, say) and beside bubblewrap, in
// one run. Each round starts every command the same number of times, in
// the order of the previous round reversed, so that a change in the
// machine's load affects each alike. A command's figure is the median of
// its rounds' medians, with their range; a ratio is the median of the
// rounds' ratios, with their range.

// startConfig is the workload of -start.
type startConfig struct {
	// Rounds is the number of rounds.
	Rounds int
	// Each is the number of starts of each command in a round.
	Each int
	// Bwrap is the bubblewrap binary, "" for none.
	Bwrap string
	// Floor adds the floors of a sandbox's start (see buildFloor), which
	// runStart builds into floors.
	Floor  bool
	floors []*startCase
}

// bwrapArgs is the bubblewrap sandbox that Anthropic's sandbox-runtime and
// Codex start, running true.
var bwrapArgs = []string{"--ro-bind", "/", "/", "--unshare-all", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "true"}

// The kinds of start the comparison times.
const (
	startSandboxShell = "sandbox shell: --sandbox -c true, to exit"
	startPlainShell   = "plain shell: -c true, to exit"
	startRPCSandbox   = "--rpc --sandbox, to the first bash answer"
)

// startCase is one command the comparison starts.
type startCase struct {
	// Kind is what start it is (startSandboxShell, ...).
	Kind string
	// Label names the program (a target's label, or "bwrap").
	Label string
	// Bin and Args are the command; for startRPCSandbox, the server.
	Bin  string
	Args []string
	// Rounds are the median times of each round's starts; CPU the CPU
	// times (user and system, the process tree's) of every start.
	Rounds sample
	CPU    sample
}

// startRatio is one comparison of two cases, round by round.
type startRatio struct {
	Kind, Of, To string
	// Ratios are the rounds' ratios of the medians of Of to those of To.
	Ratios []float64
}

// startResult is what the comparison measured.
type startResult struct {
	Cases  []*startCase
	Ratios []startRatio
	// LoadBefore and LoadAfter are the load averages around the run.
	LoadBefore, LoadAfter string
}

// startCases lists the commands to time for targets (-bin first, then
// -compare if given) and bubblewrap, grouped by kind. The servers are
// those of the suite's cold start (c.serverArgs, with --sandbox).
func startCases(targets []*target, c config, sc startConfig) []*startCase {
	var cases []*startCase
	for _, t := range targets {
		cases = append(cases, &startCase{Kind: startSandboxShell, Label: t.Label, Bin: t.Bin, Args: []string{"--sandbox", "-c", "true"}})
	}
	floors := func(kind string) {
		for _, f := range sc.floors {
			if f.Kind == kind {
				cases = append(cases, &startCase{Kind: f.Kind, Label: f.Label, Bin: f.Bin, Args: f.Args})
			}
		}
	}
	floors(startSandboxShell)
	if sc.Bwrap != "" {
		cases = append(cases, &startCase{Kind: startSandboxShell, Label: "bwrap", Bin: sc.Bwrap, Args: bwrapArgs})
	}
	for _, t := range targets {
		cases = append(cases, &startCase{Kind: startPlainShell, Label: t.Label, Bin: t.Bin, Args: []string{"-c", "true"}})
	}
	floors(startPlainShell)
	sandboxed := c
	sandboxed.Sandbox = true
	for _, t := range targets {
		cases = append(cases, &startCase{Kind: startRPCSandbox, Label: t.Label, Bin: t.Bin, Args: sandboxed.serverArgs()})
	}
	return cases
}

// runStart runs the start comparison and prints its table.
func runStart(w io.Writer, targets []*target, c config, sc startConfig) error {
	if sc.Floor && sc.floors == nil {
		dir, err := os.MkdirTemp("", "boxsh-bench-floor-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if sc.floors, err = buildFloor(context.Background(), targets[0].Bin, dir); err != nil {
			return err
		}
	}
	r, err := measureStart(targets, c, sc)
	if err != nil {
		return err
	}
	writeStart(w, r, sc)
	return nil
}

// measureStart times the starts of every case, round by round.
func measureStart(targets []*target, c config, sc startConfig) (*startResult, error) {
	if sc.Rounds < 1 || sc.Each < 1 {
		return nil, errors.New("-start and -start-each must be at least 1")
	}
	r := &startResult{Cases: startCases(targets, c, sc), LoadBefore: loadAverage()}
	order := slices.Clone(r.Cases)
	for round := range sc.Rounds {
		if round > 0 {
			slices.Reverse(order)
		}
		for _, sc2 := range order {
			times := make(sample, 0, sc.Each)
			for range sc.Each {
				d, cpu, err := timeStart(sc2, c)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", sc2.Label, strings.Join(sc2.Args, " "), err)
				}
				times = append(times, d)
				sc2.CPU = append(sc2.CPU, cpu)
			}
			sc2.Rounds = append(sc2.Rounds, times.median())
		}
	}
	r.LoadAfter = loadAverage()
	// -bin against every other program of the same kind, and each floor
	// against the others (-compare, bubblewrap).
	a := targets[0].Label
	for i, of := range r.Cases {
		for j, to := range r.Cases {
			if i == j || to.Kind != of.Kind || !(of.Label == a || isFloor(of.Label) && to.Label != a && !isFloor(to.Label)) {
				continue
			}
			ratio := startRatio{Kind: of.Kind, Of: of.Label, To: to.Label}
			for k := range of.Rounds {
				ratio.Ratios = append(ratio.Ratios, float64(of.Rounds[k])/float64(to.Rounds[k]))
			}
			r.Ratios = append(r.Ratios, ratio)
		}
	}
	return r, nil
}

// timeStart starts sc's command once and returns how long it took and its
// CPU time.
func timeStart(sc *startCase, c config) (time.Duration, time.Duration, error) {
	if sc.Kind == startRPCSandbox {
		return timeServerStart(sc, c)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(sc.Bin, sc.Args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	begin := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%v: %s", err, clip(stderr.String(), 400))
	}
	d := time.Since(begin)
	if stdout.Len() > 0 {
		return 0, 0, fmt.Errorf("stdout %q, want none", clip(stdout.String(), 200))
	}
	return d, cpuTime(cmd.ProcessState), nil
}

// timeServerStart spawns a server, sends initialize and a bash `echo x`
// call at once, and returns the time to the answer and the CPU time of the
// server's whole life (its exit included).
func timeServerStart(sc *startCase, c config) (time.Duration, time.Duration, error) {
	begin := time.Now()
	s, err := startServer(sc.Bin, sc.Args, c.Timeout)
	if err != nil {
		return 0, 0, err
	}
	if err := s.send(append(initRequests(0), toolCall(1, "bash", bashArgs("echo x"))...)); err != nil {
		s.abort()
		return 0, 0, err
	}
	line, err := s.await(1)
	if err != nil {
		s.abort()
		return 0, 0, err
	}
	d := s.arrived.Sub(begin)
	if err := checkBash(line, "x\n"); err != nil {
		s.abort()
		return 0, 0, err
	}
	if _, err := s.shutdown(exitLimit); err != nil {
		return 0, 0, err
	}
	return d, cpuTime(s.cmd.ProcessState), nil
}

// cpuTime is the user and system time of an exited process and of the
// children it waited for.
func cpuTime(ps *os.ProcessState) time.Duration {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return 0
}

// writeStart prints the comparison's table.
func writeStart(w io.Writer, r *startResult, sc startConfig) {
	fmt.Fprintf(w, "start comparison (%d rounds of %d starts each, order reversed each round; load %s before, %s after)\n", sc.Rounds, sc.Each, r.LoadBefore, r.LoadAfter)
	if sc.Bwrap != "" {
		fmt.Fprintf(w, "bwrap: %s %s\n", sc.Bwrap, strings.Join(bwrapArgs, " "))
	} else {
		fmt.Fprintln(w, "bwrap: none (not on PATH, or -bwrap \"\")")
	}
	for _, f := range sc.floors {
		fmt.Fprintf(w, "%s: %s %s (%s)\n", f.Label, filepath.Base(f.Bin), strings.Join(f.Args, " "), map[string]string{
			floorLabel:       "integration/bench/lcfloor: the least sandbox of boxsh's namespaces, no policy, through boxsh-launch",
			floorDirectLabel: "the same, libcontainer in lcfloor's process",
			execFloorLabel:   "integration/bench/execfloor: a Go program that only executes sh -c",
		}[f.Label])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "start\tprogram\tmedian ms\trounds min–max ms\tCPU median ms\t")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f–%.2f\t%.2f\t\n", c.Kind, c.Label, ms(c.Rounds.median()), ms(slices.Min(c.Rounds)), ms(slices.Max(c.Rounds)), ms(c.CPU.median()))
	}
	_ = tw.Flush()
	for _, ra := range r.Ratios {
		fmt.Fprintf(w, "%s: %s / %s = %.2f× (rounds %.2f–%.2f)\n", ra.Kind, ra.Of, ra.To, medianFloat(ra.Ratios), slices.Min(ra.Ratios), slices.Max(ra.Ratios))
	}
}

// medianFloat is the nearest-rank median of v (0 when empty).
func medianFloat(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)+1)/2-1]
}
