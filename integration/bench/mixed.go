package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// With -clients N, the many-sandboxes measurements end with N clients
// making mixed calls (bash, write, read, in turn) for -mixed: first each
// on a sandbox of its own, then all on one sandbox, so that the
// throughput and tail latency of N sandboxes stand beside one's.

// mixedResult is what N clients did in a run.
type mixedResult struct {
	calls, failed int
	took          time.Duration
	lat           []time.Duration
}

func (r mixedResult) String() string {
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	at := func(q float64) float64 {
		if len(r.lat) == 0 {
			return 0
		}
		return float64(r.lat[min(len(r.lat)-1, int(q*float64(len(r.lat))))].Microseconds()) / 1000
	}
	return fmt.Sprintf("%d calls in %v: %.0f calls/s, p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d failed",
		r.calls, r.took.Round(time.Millisecond), float64(r.calls)/r.took.Seconds(), at(0.5), at(0.99), at(1), r.failed)
}

// mixedCalls runs clients clients for d, client i calling sandbox
// names[i%len(names)] with the server's token over a connection of its
// own.
func mixedCalls(m *manyServer, names []string, clients int, d time.Duration) mixedResult {
	var (
		mu  sync.Mutex
		all mixedResult
		wg  sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer hc.CloseIdleConnections()
			base := m.base + "/s/" + names[i%len(names)] + "/v1/tools/"
			file := "mixed-" + strconv.Itoa(i) + ".txt" // in the workspace: the copy-on-write layer
			var lat []time.Duration
			failed := 0
			for n := 0; time.Now().Before(deadline); n++ {
				var tool string
				var args any
				switch n % 3 {
				case 0:
					tool, args = "bash", map[string]string{"command": "echo " + strconv.Itoa(n)}
				case 1:
					tool, args = "write", map[string]string{"path": file, "content": "line " + strconv.Itoa(n) + "\n"}
				default:
					tool, args = "read", map[string]string{"path": file}
				}
				b, _ := json.Marshal(args)
				req, _ := http.NewRequest(http.MethodPost, base+tool, bytes.NewReader(b))
				req.Header.Set("Authorization", "Bearer "+m.token)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				res, err := hc.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						err = fmt.Errorf("%s: %d", tool, res.StatusCode)
					}
				}
				if err != nil {
					failed++
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all.calls += len(lat)
			all.failed += failed
			all.lat = append(all.lat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	all.took = time.Since(start)
	return all
}

// runMixed measures clients clients on as many sandboxes, then on one.
func runMixed(w io.Writer, m *manyServer, clients int, d time.Duration) error {
	names := make([]string, clients)
	for i := range names {
		names[i] = "mixed" + strconv.Itoa(i)
		if _, _, err := m.createCall(names[i], "empty"); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "%d clients, mixed calls (bash, write, read) for %v, load %s\n", clients, d, loadAverage())
	fmt.Fprintf(w, "  on %d sandboxes: %s\n", clients, mixedCalls(m, names, clients, d))
	fmt.Fprintf(w, "  on one sandbox: %s, load %s\n", mixedCalls(m, names[:1], clients, d), loadAverage())
	for _, name := range names {
		if _, err := m.do(http.MethodDelete, "/v1/sandboxes/"+name, nil, http.StatusNoContent); err != nil {
			return err
		}
	}
	return nil
}
