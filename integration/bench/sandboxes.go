package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// With -sandboxes N the bench measures a server of many sandboxes
// (`--rpc --listen --sandboxes`) instead of the suite: a new sandbox's
// first answer (create, then its first bash call, both through the
// server), the memory of N idle sandboxes, and -cycles create → call →
// delete cycles, with the processes, descriptors, mounts, files and memory
// the server holds before and after them.

// sandboxesConfig configures the many-sandboxes measurements.
type sandboxesConfig struct {
	Idle   int // idle sandboxes for the memory figure
	Cycles int // create → call → delete cycles for the leak figure
	First  int // timed first answers
	// Clients make mixed calls for Mixed on as many sandboxes, then on
	// one (0: not measured).
	Clients int
	Mixed   time.Duration
}

// manyServer is a running server of many sandboxes.
type manyServer struct {
	cmd         *exec.Cmd
	base, token string
	state, run  string
	hc          *http.Client
}

func startManyServer(bin string, c config, max, warm int) (*manyServer, error) {
	dir, err := os.MkdirTemp("", "boxsh-bench-many")
	if err != nil {
		return nil, err
	}
	m := &manyServer{state: filepath.Join(dir, "state"), run: filepath.Join(dir, "run"),
		hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	for _, d := range []string{m.state, m.run, filepath.Join(dir, "ws")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	tokenFile := filepath.Join(dir, "token")
	cmd := exec.Command(bin, "--rpc", "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--sandboxes",
		"--workers", strconv.Itoa(c.Workers), "--max-sandboxes", strconv.Itoa(max), "--sandbox-idle", "0", "--warm-sandboxes", strconv.Itoa(warm))
	cmd.Dir = filepath.Join(dir, "ws")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+m.state, "XDG_RUNTIME_DIR="+m.run)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m.cmd = cmd
	url, token, err := awaitListening(stderr, tokenFile, c.Timeout)
	if err != nil {
		m.stop()
		return nil, err
	}
	m.base, m.token = strings.TrimSuffix(url, "/mcp"), token
	return m, nil
}

func (m *manyServer) stop() {
	terminate(m.cmd)
	os.RemoveAll(filepath.Dir(m.state))
}

// do sends a request with the server's token and checks its status.
func (m *manyServer) do(method, path string, body any, want int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, m.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := m.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != want {
		err = fmt.Errorf("%s %s: %d: %s", method, path, res.StatusCode, b)
	}
	return b, err
}

// createCall creates sandbox name and calls bash in it, returning both
// times.
func (m *manyServer) createCall(name, from string) (create, call time.Duration, err error) {
	t0 := time.Now()
	if _, err = m.do(http.MethodPost, "/v1/sandboxes", map[string]string{"name": name, "from": from}, http.StatusCreated); err != nil {
		return
	}
	t1 := time.Now()
	b, err := m.do(http.MethodPost, "/s/"+name+"/v1/tools/bash", map[string]string{"command": "echo x"}, http.StatusOK)
	if err == nil && !bytes.Contains(b, []byte(`"stdout":"x\n"`)) {
		err = fmt.Errorf("bash in %s: %s", name, b)
	}
	return t1.Sub(t0), time.Since(t1), err
}

// held is what the server holds: processes of its tree, its descriptors
// and mounts, the entries under its state and runtime directories.
type held struct {
	procs, fds, mounts, entries int
	rssKiB                      int64
}

func (m *manyServer) held() held {
	pid := strconv.Itoa(m.cmd.Process.Pid)
	var h held
	if tree, err := processTree(m.cmd.Process.Pid); err == nil {
		h.procs = len(tree)
	}
	if fds, err := os.ReadDir("/proc/" + pid + "/fd"); err == nil {
		h.fds = len(fds)
	}
	if b, err := os.ReadFile("/proc/" + pid + "/mountinfo"); err == nil {
		h.mounts = bytes.Count(b, []byte("\n"))
	}
	for _, d := range []string{m.state, m.run} {
		_ = filepath.WalkDir(d, func(string, os.DirEntry, error) error { h.entries++; return nil })
	}
	if tm, err := measureTree(m.cmd.Process.Pid); err == nil && len(tm.ByProc) > 0 {
		h.rssKiB = tm.ByProc[0].RSSKiB
	}
	return h
}

func (h held) String() string {
	return fmt.Sprintf("%d processes, %d fds, %d mounts, %d files/dirs, server RSS %.1f MiB", h.procs, h.fds, h.mounts, h.entries, float64(h.rssKiB)/1024)
}

// runSandboxes runs the many-sandboxes measurements of bin and prints them.
func runSandboxes(w io.Writer, bin string, c config, sc sandboxesConfig) error {
	if err := measureWarm(w, bin, c, sc); err != nil {
		return err
	}
	m, err := startManyServer(bin, c, max(sc.Idle, sc.Clients)+10, 0)
	if err != nil {
		return err
	}
	defer m.stop()
	fmt.Fprintf(w, "many sandboxes: %s, --workers %d, load %s\n", bin, c.Workers, loadAverage())

	// First answers, cold: create then the first call.
	if err := firstAnswers(w, m, "a new sandbox", sc.First, nil); err != nil {
		return err
	}

	// Memory of idle sandboxes.
	time.Sleep(2 * time.Second)
	before, err := measureTree(m.cmd.Process.Pid)
	if err != nil {
		return err
	}
	for i := range sc.Idle {
		if _, _, err := m.createCall("idle"+strconv.Itoa(i), "empty"); err != nil {
			return err
		}
	}
	time.Sleep(5 * time.Second) // idle: trimmed
	after, err := measureTree(m.cmd.Process.Pid)
	if err != nil {
		return err
	}
	n := float64(sc.Idle)
	fmt.Fprintf(w, "%d idle sandboxes: %.2f MiB each (PSS), %.2f MiB each (anon), %.2f MiB each (shmem), %.2f MiB each (RSS sum); %d processes each\n", sc.Idle,
		float64(after.PSSKiB-before.PSSKiB)/1024/n, float64(after.anonKiB()-before.anonKiB())/1024/n,
		float64(after.shmemKiB()-before.shmemKiB())/1024/n,
		float64(after.RSSKiB-before.RSSKiB)/1024/n, (after.Procs-before.Procs)/sc.Idle)
	fmt.Fprintf(w, "  the server's own RSS: %.1f MiB with none, %.1f MiB with %d\n", float64(before.ByProc[0].RSSKiB)/1024, float64(after.ByProc[0].RSSKiB)/1024, sc.Idle)
	for i := range sc.Idle {
		if _, err := m.do(http.MethodDelete, "/v1/sandboxes/idle"+strconv.Itoa(i), nil, http.StatusNoContent); err != nil {
			return err
		}
	}

	// Cycles: nothing left behind.
	time.Sleep(time.Second)
	h0 := m.held()
	start := time.Now()
	for i := range sc.Cycles {
		name := "cycle" + strconv.Itoa(i)
		if _, _, err := m.createCall(name, []string{"empty", "workspace"}[i%2]); err != nil {
			return err
		}
		if _, err := m.do(http.MethodDelete, "/v1/sandboxes/"+name, nil, http.StatusNoContent); err != nil {
			return err
		}
	}
	took := time.Since(start)
	time.Sleep(2 * time.Second)
	h1 := m.held()
	fmt.Fprintf(w, "%d create → call → delete cycles in %v (%.1f ms each)\n  before: %s\n  after:  %s\n", sc.Cycles, took.Round(time.Millisecond),
		float64(took.Milliseconds())/float64(sc.Cycles), h0, h1)
	if h1.procs > h0.procs || h1.fds > h0.fds || h1.mounts > h0.mounts || h1.entries > h0.entries {
		return errors.New("the cycles left something behind")
	}
	if sc.Clients > 0 {
		return runMixed(w, m, sc.Clients, sc.Mixed)
	}
	return nil
}

// quantiles is "p50 X ms, p90 Y ms (min–max)".
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return fmt.Sprintf("p50 %.1f ms, p90 %.1f ms (%.1f–%.1f)", ms(s[len(s)/2]), ms(s[len(s)*9/10]), ms(s[0]), ms(s[len(s)-1]))
}

// measureWarm times the first answer of a sandbox taken from a warm pool
// of one per kind, waiting for the pool to refill before each.
func measureWarm(w io.Writer, bin string, c config, sc sandboxesConfig) error {
	m, err := startManyServer(bin, c, sc.First+10, 1)
	if err != nil {
		return err
	}
	defer m.stop()
	refilled := func() error {
		deadline := time.Now().Add(c.Timeout)
		for {
			b, err := m.do(http.MethodGet, "/v1/sandboxes", nil, http.StatusOK)
			if err != nil || bytes.Contains(b, []byte(`"warm":2`)) {
				return err
			}
			if time.Now().After(deadline) {
				return errors.New("the warm pool did not refill")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return firstAnswers(w, m, "a sandbox from the warm pool", sc.First, refilled)
}

// firstAnswers times n creates of a sandbox and its first call (each
// after wait, if set), deleting each, and prints them as what.
func firstAnswers(w io.Writer, m *manyServer, what string, n int, wait func() error) error {
	var creates, calls, totals []time.Duration
	for i := range n {
		if wait != nil {
			if err := wait(); err != nil {
				return err
			}
		}
		name := "first" + strconv.Itoa(i)
		cr, ca, err := m.createCall(name, "empty")
		if err != nil {
			return err
		}
		creates, calls, totals = append(creates, cr), append(calls, ca), append(totals, cr+ca)
		if _, err := m.do(http.MethodDelete, "/v1/sandboxes/"+name, nil, http.StatusNoContent); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "first answer of %s (create + first bash, %d runs): %s\n", what, n, quantiles(totals))
	fmt.Fprintf(w, "  create: %s\n  first call: %s\n", quantiles(creates), quantiles(calls))
	return nil
}
