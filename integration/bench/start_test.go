package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartComparison runs a small start comparison of $BOXSH_BIN_DIR's
// boxsh against itself: every figure is there and positive, and the
// bubblewrap row is there exactly when bwrap is on PATH.
func TestStartComparison(t *testing.T) {
	dir := os.Getenv("BOXSH_BIN_DIR")
	if dir == "" {
		t.Skip("BOXSH_BIN_DIR is not set (`just test ./integration/bench` sets it)")
	}
	if os.Getuid() == 0 {
		t.Skip("sandboxes are not started as real root (`just test` runs the tests as an unprivileged user)")
	}
	bin := filepath.Join(dir, "boxsh")
	targets, err := targetsFromFlags(bin, "A", bin, "B")
	if err != nil {
		t.Fatal(err)
	}
	sc := startConfig{Rounds: 2, Each: 1}
	bwrap, lookErr := exec.LookPath("bwrap")
	if lookErr == nil {
		sc.Bwrap = bwrap
	}
	r, err := measureStart(targets, config{Workers: 4, Timeout: time.Minute}, sc)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	hasBwrap := false
	for _, c := range r.Cases {
		kinds[c.Kind]++
		hasBwrap = hasBwrap || c.Label == "bwrap"
		if len(c.Rounds) != sc.Rounds || len(c.CPU) != sc.Rounds*sc.Each {
			t.Errorf("%s %s: %d rounds and %d CPU times, want %d and %d", c.Kind, c.Label, len(c.Rounds), len(c.CPU), sc.Rounds, sc.Rounds*sc.Each)
		}
		for _, d := range append(append(sample{}, c.Rounds...), c.CPU...) {
			if d <= 0 {
				t.Errorf("%s %s: a figure is %v, want positive", c.Kind, c.Label, d)
			}
		}
	}
	wantSandbox := 2
	if lookErr == nil {
		wantSandbox = 3
	}
	if kinds[startSandboxShell] != wantSandbox || kinds[startPlainShell] != 2 || kinds[startRPCSandbox] != 2 || hasBwrap != (lookErr == nil) {
		t.Errorf("cases %v, bwrap row %v; want %d sandboxed shell starts, 2 plain, 2 --rpc, a bwrap row iff bwrap is on PATH (%v)", kinds, hasBwrap, wantSandbox, lookErr)
	}
	// A against B of each kind, and A against bwrap.
	if want := 3 + len(r.Cases) - 6; len(r.Ratios) != want {
		t.Errorf("%d ratios, want %d: %+v", len(r.Ratios), want, r.Ratios)
	}
	for _, ra := range r.Ratios {
		if len(ra.Ratios) != sc.Rounds || ra.Ratios[0] <= 0 {
			t.Errorf("ratio %+v: want %d positive ratios", ra, sc.Rounds)
		}
	}
	var out bytes.Buffer
	writeStart(&out, r, sc)
	if strings.Count(out.String(), "\n") != 3+len(r.Cases)+len(r.Ratios) {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestStartFloor builds the floors of the starts, checks that the sandbox's
// run their command in new namespaces and the plain one executes sh, and
// times them beside -bin and bubblewrap.
func TestStartFloor(t *testing.T) {
	dir := os.Getenv("BOXSH_BIN_DIR")
	if dir == "" {
		t.Skip("BOXSH_BIN_DIR is not set (`just test ./integration/bench` sets it)")
	}
	if os.Getuid() == 0 {
		t.Skip("sandboxes are not started as real root (`just test` runs the tests as an unprivileged user)")
	}
	bin := filepath.Join(dir, "boxsh")
	floors, err := buildFloor(t.Context(), bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var host []string
	for _, ns := range []string{"pid", "mnt", "user"} {
		l, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		host = append(host, l)
	}
	for _, f := range floors {
		if f.Kind != startSandboxShell {
			out, err := exec.Command(f.Bin, "-c", "echo $0; exit 5").CombinedOutput()
			if code := exitCode(err); code != 5 || string(out) != "sh\n" {
				t.Errorf("%s -c 'echo $0; exit 5': status %d (%v), output %q; want sh's 5 and \"sh\"", f.Label, code, err, out)
			}
			continue
		}
		out, err := exec.Command(f.Bin, append(f.Args, "--", "/bin/sh", "-c", "readlink /proc/self/ns/pid /proc/self/ns/mnt /proc/self/ns/user; id -u; exit 3")...).CombinedOutput()
		if code := exitCode(err); code != 3 {
			t.Fatalf("%s: exit status %d (%v), want the command's 3\n%s", f.Label, code, err, out)
		}
		lines := strings.Fields(string(out))
		if len(lines) != 4 || lines[3] != "0" {
			t.Fatalf("%s: the command printed %q, want three namespaces and uid 0", f.Label, out)
		}
		for i, l := range lines[:3] {
			if l == host[i] {
				t.Errorf("%s: the sandbox shares the namespace %s with the host", f.Label, l)
			}
		}
	}

	targets, err := targetsFromFlags(bin, "A", "", "")
	if err != nil {
		t.Fatal(err)
	}
	sc := startConfig{Rounds: 1, Each: 1, floors: floors}
	if bwrap, err := exec.LookPath("bwrap"); err == nil {
		sc.Bwrap = bwrap
	}
	r, err := measureStart(targets, config{Workers: 4, Timeout: time.Minute}, sc)
	if err != nil {
		t.Fatal(err)
	}
	ratios := map[string]bool{}
	for _, ra := range r.Ratios {
		ratios[ra.Of+"/"+ra.To] = len(ra.Ratios) == 1 && ra.Ratios[0] > 0
	}
	for _, f := range []string{floorLabel, floorDirectLabel, execFloorLabel} {
		if !ratios["A/"+f] {
			t.Errorf("no positive ratio of A to %s: %+v", f, r.Ratios)
		}
		if f != execFloorLabel && sc.Bwrap != "" && !ratios[f+"/bwrap"] {
			t.Errorf("no positive ratio of %s to bwrap: %+v", f, r.Ratios)
		}
	}
	if len(r.Ratios) != len(ratios) {
		t.Errorf("a ratio twice: %+v", r.Ratios)
	}
	var table bytes.Buffer
	writeStart(&table, r, sc)
	for _, want := range []string{"floor: lcfloor -launcher ", "floor-direct: lcfloor -direct ", "exec-floor: execfloor -c true "} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table without %q:\n%s", want, table.String())
		}
	}
}

// exitCode is the exit status of a command's error, 0 for none, -1 for an
// error that is not an exit.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}
