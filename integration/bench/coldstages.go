package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/boxsh/boxsh/internal/starttrace"
)

// stagesConfig is the workload of -cold-stages.
type stagesConfig struct {
	// Runs is the number of cold starts of each target.
	Runs int
	// Shell times `BIN [--sandbox] -c 'echo x'` to its exit instead of
	// the --rpc server's first answer.
	Shell bool
	// Binds are --bind options for the sandbox (with -sandbox).
	Binds []string
}

// stageRun is one traced cold start: the marks' times from the spawn.
type stageRun map[string]time.Duration

// Stage names of the bench's own marks, and the key of the CPU time (user
// and system) of the shell mode's process tree, which is no stage.
const (
	stageAnswer = "answer"
	stageExit   = "exit"
	cpuKey      = "cpu"
)

// runColdStages times cold starts of every target with BOXSH_TRACE_START
// set, the targets taking turns. For each target it prints the stages in
// the order they happen. For each stage it prints the median time from the
// previous stage, with its range, and the median time from the spawn.
func runColdStages(w io.Writer, targets []*target, c config, sc stagesConfig) error {
	if err := os.Setenv(starttrace.EnvVar, "1"); err != nil {
		return err
	}
	runs := make([][]stageRun, len(targets))
	for range sc.Runs {
		for i, t := range targets {
			var r stageRun
			var err error
			if sc.Shell {
				r, err = tracedShellStart(t, c, sc)
			} else {
				r, err = tracedServerStart(t, c, sc)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", t.Label, err)
			}
			runs[i] = append(runs[i], r)
		}
	}
	mode := "--rpc, spawn to the first bash answer"
	if sc.Shell {
		mode = "-c 'echo x', spawn to exit"
	}
	fmt.Fprintf(w, "cold start stages (%s; sandbox %v; %d runs each; load %s)\n", mode, c.Sandbox, sc.Runs, loadAverage())
	for i, t := range targets {
		fmt.Fprintf(w, "\n%s\n", t.Label)
		writeStages(w, runs[i])
	}
	return nil
}

// writeStages prints the per-stage table of runs.
func writeStages(w io.Writer, runs []stageRun) {
	at := map[string]sample{}
	step := map[string]sample{}
	var cpu sample
	for _, r := range runs {
		if d, ok := r[cpuKey]; ok {
			cpu = append(cpu, d)
		}
		names := stageOrder(r)
		prev := time.Duration(0)
		for _, n := range names {
			at[n] = append(at[n], r[n])
			step[n] = append(step[n], r[n]-prev)
			prev = r[n]
		}
	}
	// The stages in the order of their median time.
	names := make([]string, 0, len(at))
	for n := range at {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return int(at[a].median() - at[b].median()) })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tstep median ms\tstep min–max ms\tat median ms\truns\t")
	for _, n := range names {
		s := step[n]
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f–%.2f\t%.2f\t%d\t\n", n, ms(s.median()), ms(s.percentile(0)), ms(s.percentile(100)), ms(at[n].median()), len(s))
	}
	_ = tw.Flush()
	if len(cpu) > 0 {
		fmt.Fprintf(w, "CPU (user+sys) of the process tree: median %.2f ms, %.2f–%.2f ms\n", ms(cpu.median()), ms(cpu.percentile(0)), ms(cpu.percentile(100)))
	}
}

// stageOrder lists the stages of r by their time.
func stageOrder(r stageRun) []string {
	names := make([]string, 0, len(r))
	for n := range r {
		if n != cpuKey {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return int(r[a] - r[b]) })
	return names
}

// tracedServerStart spawns a --rpc server, sends initialize and a bash
// `echo x` call at once, and returns the marks its processes wrote until
// the answer, and the answer's arrival.
func tracedServerStart(t *target, c config, sc stagesConfig) (stageRun, error) {
	begin := time.Now()
	s, err := startServer(t.Bin, c.serverArgs(sc.Binds...), c.Timeout)
	if err != nil {
		return nil, err
	}
	if err := s.send(append(initRequests(0), toolCall(1, "bash", bashArgs("echo x"))...)); err != nil {
		s.abort()
		return nil, err
	}
	line, err := s.await(1)
	if err != nil {
		s.abort()
		return nil, err
	}
	arrived := s.arrived
	if err := checkBash(line, "x\n"); err != nil {
		s.abort()
		return nil, err
	}
	r, err := readMarks(s.stderr, begin)
	if _, err := s.shutdown(exitLimit); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	r[stageAnswer] = arrived.Sub(begin)
	return r, nil
}

// tracedShellStart runs `BIN [--sandbox [--bind ...]] -c 'echo x'` and
// returns the marks it wrote, and its exit.
func tracedShellStart(t *target, c config, sc stagesConfig) (stageRun, error) {
	stderr, err := os.CreateTemp("", "boxsh-bench-stderr-")
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	_ = os.Remove(stderr.Name())
	var args []string
	if c.Sandbox {
		args = append(args, "--sandbox")
		for _, b := range sc.Binds {
			args = append(args, "--bind", b)
		}
	}
	args = append(args, "-c", "echo x")
	var out bytes.Buffer
	cmd := exec.Command(t.Bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = &out, stderr
	begin := time.Now()
	if err := cmd.Run(); err != nil {
		b, _ := io.ReadAll(io.NewSectionReader(stderr, 0, 1<<20))
		return nil, fmt.Errorf("%v: %s", err, clip(string(b), 400))
	}
	end := time.Now()
	if out.String() != "x\n" {
		return nil, fmt.Errorf("stdout %q, want \"x\\n\"", clip(out.String(), 200))
	}
	r, err := readMarks(stderr, begin)
	if err != nil {
		return nil, err
	}
	r[stageExit] = end.Sub(begin)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		// The CPU the start cost, the processes it waited for included:
		// unlike the stages' times, it does not grow with the load.
		r[cpuKey] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r, nil
}

// readMarks reads the marks (starttrace lines) from the stderr file f, as
// times from begin; other lines are ignored.
func readMarks(f *os.File, begin time.Time) (stageRun, error) {
	r := stageRun{}
	sc := bufio.NewScanner(io.NewSectionReader(f, 0, 1<<30))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), starttrace.Prefix)
		if !ok {
			continue
		}
		stage, ns, ok := strings.Cut(rest, " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("bad mark %q", sc.Text())
		}
		if _, dup := r[stage]; !dup {
			r[stage] = time.Unix(0, n).Sub(begin)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(r) == 0 {
		return nil, errors.New("no marks on stderr: is it a boxsh with BOXSH_TRACE_START?")
	}
	return r, nil
}
