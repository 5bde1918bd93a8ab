package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
)

// TestSnapshotLimitCountsInFlight asks for more snapshots than the limit,
// in two bursts at once. The bursts are smaller than the management API's
// own bound on requests in flight. Snapshots being made count against the
// limit, so no more than the limit are made. Each other request is refused
// with the limit named.
func TestSnapshotLimitCountsInFlight(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	srv := client.NewServer(m.base, m.token, nil)
	_, err := srv.Create(ctx, "a", client.FromEmpty)
	require.NoError(t, err)
	_, err = srv.Sandbox("a", m.token).Run(ctx, "mkdir d; for i in $(seq 20); do echo $i > d/f$i; done")
	require.NoError(t, err)

	const limit = 64
	// wave asks for snapshots first to first+n-1 at once.
	wave := func(first, n int) []error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = srv.Snapshot(ctx, "a", fmt.Sprintf("s%d", first+i))
			}()
		}
		wg.Wait()
		return errs
	}
	for i, err := range wave(0, 30) {
		require.NoError(t, err, "snapshot %d, within the limit", i)
	}
	made := 30
	for i, err := range wave(30, 50) {
		if err == nil {
			made++
			continue
		}
		var he *client.HTTPError
		require.ErrorAs(t, err, &he, "snapshot %d", 30+i)
		assert.Equal(t, http.StatusTooManyRequests, he.StatusCode, "snapshot %d: %s", 30+i, he.Detail)
		assert.Contains(t, he.Detail, fmt.Sprintf("limit reached: the server keeps %d snapshots", limit), "snapshot %d", 30+i)
		assert.Contains(t, he.Detail, fmt.Sprintf("its maximum (%d)", limit), "snapshot %d", 30+i)
	}
	assert.Equal(t, limit, made, "snapshots made against the limit of %d", limit)
	list, err := srv.Snapshots(ctx)
	require.NoError(t, err)
	assert.Len(t, list, made, "every snapshot answered as made is kept, and no other")
	dirs, err := os.ReadDir(filepath.Join(m.state, "boxsh", "snapshots"))
	require.NoError(t, err)
	assert.Len(t, dirs, made, "no snapshot directory besides those made")
}

// TestWarmSandboxLabelled checks that a sandbox taken from the warm pool
// for a name has its session labelled with that name, on disk. After the
// server stops, boxsh sessions tells whose changes the session holds.
func TestWarmSandboxLabelled(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx, "--warm-sandboxes", "1")
	sessions := filepath.Join(m.state, "boxsh", "sessions")
	// labels are the labels of the sessions on disk, by their DST.
	labels := func() map[string]string {
		out := map[string]string{}
		entries, _ := os.ReadDir(sessions)
		for _, e := range entries {
			var meta struct {
				Dst   string `json:"dst"`
				Label string `json:"label"`
			}
			if b, err := os.ReadFile(filepath.Join(sessions, e.Name(), "boxsh-session.json")); err == nil && json.Unmarshal(b, &meta) == nil {
				out[meta.Dst] = meta.Label
			}
		}
		return out
	}
	var warm map[string]string
	require.Eventually(t, func() bool {
		warm = labels()
		n := 0
		for _, l := range warm {
			if l == "sandbox warm" {
				n++
			}
		}
		return n == 2 // one of each kind
	}, replyTimeout, 20*time.Millisecond, "the warm pool fills")

	a := m.create(t, "alpha", "workspace")
	require.Contains(t, warm, a.Workspace, "alpha is taken from the warm pool")
	_, err := client.NewServer(m.base, m.token, nil).Sandbox("alpha", a.Token).Run(ctx, "echo mine > mine.txt")
	require.NoError(t, err)
	assert.Equal(t, "sandbox alpha", labels()[a.Workspace], "alpha's session on disk")

	require.NoError(t, m.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-m.exited:
	case <-time.After(exitTimeout):
		t.Fatal("the server did not stop on SIGTERM")
	}
	r := runBoxshIn(t, ctx, t.TempDir(), "", nil, "sessions", "--base", sessions)
	require.Equal(t, 0, r.code(), "%s", r.stderr)
	var line string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, a.Workspace) {
			line = l
		}
	}
	require.NotEmpty(t, line, "alpha's session is listed: %s", r.stdout)
	assert.Contains(t, line, "sandbox alpha")
	assert.NotContains(t, line, "warm")
}

// TestSnapshotPausedMS checks that a snapshot's paused_ms is the time the
// sandbox's processes were stopped. It must be at least the time the test,
// watching from outside, sees a loop of the sandbox stopped (state T in
// /proc). The loop's own view, the gap in the times it writes, is logged
// beside it.
func TestSnapshotPausedMS(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	srv := client.NewServer(m.base, m.token, nil)
	_, err := srv.Create(ctx, "a", client.FromEmpty)
	require.NoError(t, err)
	a := srv.Sandbox("a", m.token)
	// Processes to stop, and a loop that writes the time (µs) as it goes.
	_, err = a.Run(ctx, "for i in $(seq 30); do sleep 1000 >/dev/null 2>&1 & done")
	require.NoError(t, err)
	const loop = `while :; do t=${EPOCHREALTIME/./}; echo $t >> ts; done`
	_, err = a.StartBackground(ctx, client.ExecRequest{Command: `exec bash -c '` + loop + `' boxsh-paused-loop`})
	require.NoError(t, err)
	pid := hostPID(t, "bash\x00-c\x00"+loop+"\x00boxsh-paused-loop\x00")
	lines := func(c *client.Client) []int64 {
		t.Helper()
		res, err := c.Run(ctx, "cat ts")
		require.NoError(t, err)
		var out []int64
		for _, l := range strings.Fields(res.Stdout) {
			n, err := strconv.ParseInt(l, 10, 64)
			require.NoError(t, err, "a line of ts: %q", l)
			out = append(out, n)
		}
		return out
	}
	require.Eventually(t, func() bool { return len(lines(a)) > 100 }, replyTimeout, 20*time.Millisecond)

	// Watch the loop's state while the snapshot runs.
	var first, last time.Time
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if processState(pid) == 'T' {
				now := time.Now()
				if first.IsZero() {
					first = now
				}
				last = now
			}
		}
	}()
	snap, err := srv.Snapshot(ctx, "a", "s")
	close(stop)
	<-watched
	require.NoError(t, err)
	require.False(t, first.IsZero(), "the loop was seen stopped during the snapshot")
	seen := last.Sub(first)

	bi, err := srv.Create(ctx, "b", client.FromSnapshot("s"))
	require.NoError(t, err)
	before := lines(srv.Sandbox("b", bi.Token))
	n := len(before)
	require.Positive(t, n)
	var live []int64
	require.Eventually(t, func() bool {
		live = lines(a)
		return len(live) > n+1
	}, replyTimeout, 20*time.Millisecond, "the loop goes on after the snapshot")
	require.Equal(t, before, live[:n], "the snapshot holds the loop's lines up to the pause")
	gap := time.Duration(max(live[n]-live[n-1], live[n+1]-live[n])) * time.Microsecond
	t.Logf("paused_ms %.3f; the loop seen stopped for %v from outside; the gap in its times %v", snap.PausedMS, seen, gap)
	assert.GreaterOrEqual(t, snap.Paused, seen, "paused_ms is at least the time the loop was stopped")
}
