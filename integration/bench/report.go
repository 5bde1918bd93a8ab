package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// metricDef describes one row of the table.
type metricDef struct {
	Key   string // key in target.Metrics and the JSON output
	Title string // row title
	Unit  string
	Prec  int // digits after the decimal point
}

// metricDefs lists the table rows in order.
var metricDefs = []metricDef{
	{"cold_start_median_ms", "cold start to 1st answer, median", "ms", 2},
	{"cold_start_p90_ms", "cold start to 1st answer, p90", "ms", 2},
	{"exit_median_ms", "process exit after stdin EOF, median", "ms", 2},
	{"rtt_median_ms", "round trip echo x, median", "ms", 3},
	{"rtt_p90_ms", "round trip echo x, p90", "ms", 3},
	{"rtt_p99_ms", "round trip echo x, p99", "ms", 3},
	{"paused_rtt_median_ms", "round trip after a pause, median", "ms", 3},
	{"paused_rtt_p90_ms", "round trip after a pause, p90", "ms", 3},
	{"paused_rtt_p99_ms", "round trip after a pause, p99", "ms", 3},
	{"pipelined_total_ms", "pipelined true calls, total", "ms", 1},
	{"pipelined_calls_per_s", "pipelined true calls, rate", "calls/s", 0},
	{"pipelined_distinct_ids", "pipelined, distinct ids answered", "", 0},
	{"read_median_ms", "read 1 KiB file, median", "ms", 3},
	{"read_p99_ms", "read 1 KiB file, p99", "ms", 3},
	{"big_output_median_ms", "8 MiB stdout to full answer, median", "ms", 1},
	{"big_answer_mb", "8 MiB stdout, answer line size", "MB", 1},
	{"idle_rss_mb", "idle VmRSS, sum over tree", "MiB", 1},
	{"idle_pss_mb", "idle PSS, sum over tree", "MiB", 1},
	{"idle_procs", "idle processes in tree", "", 0},
	{"idle_rss_root_mb", "idle VmRSS, server process alone", "MiB", 1},
	{"idle_anon_mb", "idle RssAnon (no mapped files), sum", "MiB", 1},
	{"idle_pss_pair_mb", "idle PSS, sum over tree, beside a second server", "MiB", 1},
	{"idle_shmem_mb", "idle RssShmem (memfds, shared memory), sum", "MiB", 1},
	{"churn_idle_rss_mb", "VmRSS idle, before the -churn calls", "MiB", 1},
	{"churn_after_rss_mb", "VmRSS idle, after the -churn calls", "MiB", 1},
	{"churn_growth_pct", "VmRSS growth over the -churn calls", "%", 1},
	{"http_rtt_median_ms", "HTTP round trip echo x, median", "ms", 3},
	{"http_rtt_p90_ms", "HTTP round trip echo x, p90", "ms", 3},
	{"http_rtt_p99_ms", "HTTP round trip echo x, p99", "ms", 3},
	{"http_concurrent_calls_per_s", "HTTP 50 clients, true calls rate", "calls/s", 0},
	{"http_session_kib", "HTTP idle MCP session, front RSS", "KiB", 1},
}

// report is everything one bench run produced.
type report struct {
	Config     config    `json:"config"`
	LoadBefore string    `json:"load_before"`
	LoadAfter  string    `json:"load_after"`
	Results    []*target `json:"results"`
}

// writeJSON prints the report as indented JSON.
func writeJSON(w io.Writer, r report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeTable prints the report as a human-readable table, one column per
// target, plus a B/A ratio column when there are exactly two.
func writeTable(w io.Writer, r report) {
	c := r.Config
	fmt.Fprintf(w, "boxsh protocol bench: --workers %d; %d cold starts; %d round trips, %d after a %v pause each, and %d reads after %d warm-up calls; %d pipelined calls; %d × 8 MiB; %d calls between two memory readings\n",
		c.Workers, c.ColdRuns, c.RoundTrips, c.Paused, c.Pause, c.Reads, c.Warmup, c.Pipelined, c.BigRuns, c.Churn)
	fmt.Fprintf(w, "load average before: %s, after: %s\n", r.LoadBefore, r.LoadAfter)
	for _, t := range r.Results {
		fmt.Fprintf(w, "  %s = %s (%s)\n", t.Label, t.Bin, orDash(t.Server))
	}
	fmt.Fprintln(w)
	for _, row := range tableRows(r.Results) {
		fmt.Fprintln(w, strings.TrimRight(row, " "))
	}
	fmt.Fprintln(w)
	for _, t := range r.Results {
		for _, n := range t.Notes {
			fmt.Fprintf(w, "%s: %s\n", t.Label, n)
		}
	}
	fmt.Fprintln(w)
	for _, t := range r.Results {
		if len(t.Problems) == 0 {
			fmt.Fprintf(w, "%s: no correctness problems noticed\n", t.Label)
			continue
		}
		fmt.Fprintf(w, "%s: %d correctness problem(s):\n", t.Label, len(t.Problems))
		for _, p := range t.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
}

// tableRows renders the header and metric rows with aligned columns.
func tableRows(targets []*target) []string {
	header := []string{"metric", "unit"}
	for _, t := range targets {
		header = append(header, t.Label)
	}
	withRatio := len(targets) == 2
	if withRatio {
		header = append(header, targets[1].Label+"/"+targets[0].Label)
	}
	cells := [][]string{header}
	for _, m := range metricDefs {
		row := []string{m.Title, m.Unit}
		for _, t := range targets {
			row = append(row, formatValue(t.Metrics, m))
		}
		if withRatio {
			row = append(row, ratio(targets[0].Metrics[m.Key], targets[1].Metrics[m.Key]))
		}
		cells = append(cells, row)
	}
	return alignColumns(cells)
}

// formatValue renders one metric of one target, "-" when not measured.
func formatValue(metrics map[string]float64, m metricDef) string {
	v, ok := metrics[m.Key]
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', m.Prec, 64)
}

// ratio renders b/a with two decimals, "-" when undefined.
func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return strconv.FormatFloat(b/a, 'f', 2, 64)
}

// alignColumns pads cells into lines: the first two columns left-aligned,
// the others right-aligned, two spaces apart.
func alignColumns(cells [][]string) []string {
	widths := map[int]int{}
	for _, row := range cells {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	lines := make([]string, 0, len(cells))
	for _, row := range cells {
		var b strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i < 2 {
				b.WriteString(cell + pad + "  ")
			} else {
				b.WriteString(pad + cell + "  ")
			}
		}
		lines = append(lines, b.String())
	}
	return lines
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
