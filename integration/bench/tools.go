package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The tool workloads beyond read: a large write and the terminal tools'
// answer latency. They have flags of their own and add themselves to the
// suite and the table.
var (
	writeRuns = flag.Int("writes", 5, "20 MB write-tool calls to time (0: skip)")
	termPolls = flag.Int("term-polls", 20, "get_terminal_output calls to time on a quiet and on a streaming terminal (0: skip)")
)

const (
	// bigWriteBytes is the content size of the write measurement.
	bigWriteBytes = 20_000_000
	// quietCommand prints once, then is silent for longer than any bench.
	quietCommand = "echo ready; exec sleep 600"
	// streamCommand prints a line every 10 ms, never pausing long enough
	// for a quiet screen.
	streamCommand = "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.01; done"
)

func init() {
	suite = append(suite,
		measurement{"20 MB write", measureBigWrite},
		measurement{"terminal output", measureTerminalOutput},
	)
	metricDefs = append(metricDefs,
		metricDef{"write_20mb_median_ms", "write 20 MB file, median", "ms", 1},
		metricDef{"write_20mb_min_ms", "write 20 MB file, min", "ms", 1},
		metricDef{"write_20mb_max_ms", "write 20 MB file, max", "ms", 1},
		metricDef{"term_quiet_median_ms", "get_terminal_output, quiet screen, median", "ms", 1},
		metricDef{"term_quiet_max_ms", "get_terminal_output, quiet screen, max", "ms", 1},
		metricDef{"term_stream_median_ms", "get_terminal_output, streaming, median", "ms", 1},
		metricDef{"term_stream_max_ms", "get_terminal_output, streaming, max", "ms", 1},
	)
}

// measureBigWrite times write-tool calls of bigWriteBytes of text to the
// same file (the first creates it, untimed; the others replace it), each
// until its answer arrived, and checks the file written.
func measureBigWrite(t *target, c config) error {
	if *writeRuns < 1 {
		return nil
	}
	dir, err := os.MkdirTemp("", "boxsh-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "big.txt")
	text := bigText(bigWriteBytes)
	return session(t, c, "20 MB write", func(s *server) error {
		var answers tally
		var times sample
		for i := range 1 + *writeRuns {
			d, line, err := timedCall(s, "write", map[string]any{"path": path, "content": text})
			if err != nil {
				return err
			}
			if i > 0 {
				times = append(times, d)
			}
			answers.check(checkWrite(line, path, text))
		}
		answers.report(t, "20 MB write")
		t.set("write_20mb_median_ms", ms(times.median()))
		t.set("write_20mb_min_ms", ms(times.percentile(0.001)))
		t.set("write_20mb_max_ms", ms(times.percentile(100)))
		return nil
	}, "wr:"+dir)
}

// bigText is n bytes of numbered lines of text.
func bigText(n int) string {
	var b strings.Builder
	b.Grow(n + 64)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%-63s\n", fmt.Sprintf("line %d: the quick brown fox jumps over the lazy dog", i))
	}
	return b.String()[:n]
}

// checkWrite verifies a write answer is no error and the file holds want.
func checkWrite(line []byte, path, want string) error {
	var a toolAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		return fmt.Errorf("undecodable answer: %v", err)
	}
	if a.Error != nil {
		return a.Error
	}
	if a.Result == nil || a.Result.IsError {
		return fmt.Errorf("write failed: %s", clip(string(line), 200))
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if string(got) != want {
		return fmt.Errorf("file holds %d bytes, not the %d written", len(got), len(want))
	}
	return nil
}

// terminalSnap is the structured result of the terminal tools.
type terminalSnap struct {
	ID     string `json:"id"`
	Output string `json:"output"`
	Exited bool   `json:"exited"`
}

// measureTerminalOutput times get_terminal_output on a terminal whose
// command printed once and is quiet since, then on one whose command prints
// every 10 ms; each answer must show what the command printed.
func measureTerminalOutput(t *target, c config) error {
	if *termPolls < 1 {
		return nil
	}
	return session(t, c, "terminal output", func(s *server) error {
		var answers tally
		for _, w := range []struct{ command, want, key string }{
			{quietCommand, "ready", "term_quiet"},
			{streamCommand, "tick", "term_stream"},
		} {
			times, err := pollTerminal(s, w.command, w.want, *termPolls, &answers)
			if err != nil {
				return err
			}
			t.set(w.key+"_median_ms", ms(times.median()))
			t.set(w.key+"_max_ms", ms(times.percentile(100)))
		}
		answers.report(t, "terminal output")
		return nil
	})
}

// pollTerminal runs command in a terminal and waits until its output shows
// want. Then it times n get_terminal_output calls, each of which must show
// want and report the command running. It kills the terminal at the end.
func pollTerminal(s *server, command, want string, n int, answers *tally) (sample, error) {
	line, err := s.call("run_in_terminal", map[string]any{"command": command})
	if err != nil {
		return nil, err
	}
	var snap terminalSnap
	if err := structured(line, &snap); err != nil {
		return nil, fmt.Errorf("run_in_terminal: %v", err)
	}
	if snap.ID == "" {
		return nil, fmt.Errorf("run_in_terminal answered no id: %s", clip(string(line), 200))
	}
	defer func() { _, _ = s.call("kill_terminal", map[string]any{"id": snap.ID}) }()
	args := map[string]any{"id": snap.ID}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(snap.Output, want); {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("terminal never showed %q: %q", want, clip(snap.Output, 200))
		}
		if line, err = s.call("get_terminal_output", args); err != nil {
			return nil, err
		}
		if err := structured(line, &snap); err != nil {
			return nil, err
		}
	}
	times := make(sample, 0, n)
	for range n {
		d, line, err := timedCall(s, "get_terminal_output", args)
		if err != nil {
			return nil, err
		}
		times = append(times, d)
		var snap terminalSnap
		err = structured(line, &snap)
		if err == nil && (!strings.Contains(snap.Output, want) || snap.Exited) {
			err = fmt.Errorf("output %q, exited %v: want %q shown and the command running", clip(snap.Output, 100), snap.Exited, want)
		}
		answers.check(err)
	}
	return times, nil
}
