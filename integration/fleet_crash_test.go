package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/internal/tool"
)

// fleet is a server of many sandboxes killed and started again on one
// state directory, with --audit.
type fleet struct {
	t     *testing.T
	ctx   context.Context
	m     *manyBoxsh
	srv   *client.Server
	audit string
	args  []string
}

// startFleet starts a server of many sandboxes on a workspace holding
// seed.txt, with its audit log.
func startFleet(t *testing.T, ctx context.Context, args ...string) *fleet {
	t.Helper()
	requireRootless(t)
	f := &fleet{t: t, ctx: ctx, audit: filepath.Join(t.TempDir(), "audit.jsonl")}
	f.args = append([]string{"--sandboxes", "--workers", "1", "--audit", f.audit}, args...)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "seed.txt"), []byte("seed\n"), 0o644))
	f.m = &manyBoxsh{workspace: ws, state: t.TempDir(), run: t.TempDir()}
	f.start()
	return f
}

// start starts the server on the fleet's state directory.
func (f *fleet) start() {
	f.t.Helper()
	f.m.httpBoxsh = startHTTPIn(f.t, f.ctx, f.m.workspace, []string{"XDG_STATE_HOME=" + f.m.state, "XDG_RUNTIME_DIR=" + f.m.run}, f.args...)
	f.srv = client.NewServer(f.m.base, f.m.token, nil)
}

// kill kills the server (SIGKILL) and waits for it to be gone.
func (f *fleet) kill() {
	f.t.Helper()
	require.NoError(f.t, f.m.cmd.Process.Kill())
	select {
	case <-f.m.exited:
	case <-time.After(exitTimeout):
		f.t.Fatal("the server did not die")
	}
}

// run runs command in sandbox name, with the server's token.
func (f *fleet) run(name, command string) string {
	f.t.Helper()
	res, err := f.srv.Sandbox(name, f.m.token).Run(f.ctx, command)
	require.NoError(f.t, err, "%s: %s", name, command)
	require.Equal(f.t, 0, res.ExitCode, "%s: %s: %s", name, command, res.Stderr)
	return res.Stdout
}

// sandboxes are the names of the sandboxes the server lists.
func (f *fleet) sandboxes() []string {
	f.t.Helper()
	list, err := f.srv.List(f.ctx)
	require.NoError(f.t, err)
	var out []string
	for _, s := range list {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// snapshots are the names of the snapshots the server lists.
func (f *fleet) snapshots() []string {
	f.t.Helper()
	list, err := f.srv.Snapshots(f.ctx)
	require.NoError(f.t, err)
	var out []string
	for _, s := range list {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// leftOver walks the state directory for what a killed operation may leave,
// and returns what it found:
//   - temporary directories;
//   - sessions without metadata or record, or of no listed sandbox;
//   - snapshots without description, or not listed;
//   - empty directories no session works on.
func (f *fleet) leftOver() []string {
	f.t.Helper()
	root := filepath.Join(f.m.state, "boxsh")
	var bad []string
	sessions, err := os.ReadDir(filepath.Join(root, "sessions"))
	require.NoError(f.t, err)
	srcs := map[string]bool{}
	var named []string
	for _, e := range sessions {
		dir := filepath.Join(root, "sessions", e.Name())
		var meta struct {
			Src string `json:"src"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "boxsh-session.json"))
		if err != nil || json.Unmarshal(b, &meta) != nil {
			bad = append(bad, "a session directory without its metadata: "+dir)
			continue
		}
		srcs[meta.Src] = true
		var rec struct {
			Name string `json:"name"`
		}
		b, err = os.ReadFile(filepath.Join(dir, "sandbox.json"))
		if err != nil || json.Unmarshal(b, &rec) != nil {
			bad = append(bad, "a session without its sandbox's record: "+dir)
			continue
		}
		named = append(named, rec.Name)
		entries, err := os.ReadDir(dir)
		require.NoError(f.t, err)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".reset") || strings.Contains(e.Name(), ".tmp") {
				bad = append(bad, "a half-made file of a session: "+filepath.Join(dir, e.Name()))
			}
		}
	}
	slices.Sort(named)
	if listed := f.sandboxes(); !slices.Equal(named, listed) {
		bad = append(bad, fmt.Sprintf("sessions of sandboxes %q, the server lists %q", named, listed))
	}
	snaps, err := os.ReadDir(filepath.Join(root, "snapshots"))
	require.NoError(f.t, err)
	var made []string
	for _, e := range snaps {
		dir := filepath.Join(root, "snapshots", e.Name())
		if _, err := os.Stat(filepath.Join(dir, "snapshot.json")); err != nil {
			bad = append(bad, "a snapshot directory without its description: "+dir)
			continue
		}
		made = append(made, e.Name())
	}
	slices.Sort(made)
	if listed := f.snapshots(); !slices.Equal(made, listed) {
		bad = append(bad, fmt.Sprintf("snapshot directories %q, the server lists %q", made, listed))
	}
	empties, err := os.ReadDir(filepath.Join(root, "sandboxes"))
	if !errors.Is(err, fs.ErrNotExist) {
		require.NoError(f.t, err)
	}
	for _, e := range empties {
		if dir := filepath.Join(root, "sandboxes", e.Name()); !srcs[dir] {
			bad = append(bad, "an empty directory no session works on: "+dir)
		}
	}
	return bad
}

// halfMade lists what a killed server left for the next start to finish or
// remove:
//   - temporary directories of snapshots, forks and sessions;
//   - snapshots without description;
//   - sessions without record, or with a half-done reset or file;
//   - empty directories no session works on.
func (f *fleet) halfMade() []string {
	f.t.Helper()
	root := filepath.Join(f.m.state, "boxsh")
	var out []string
	snaps, _ := os.ReadDir(filepath.Join(root, "snapshots"))
	for _, e := range snaps {
		dir := filepath.Join(root, "snapshots", e.Name())
		if _, err := os.Stat(filepath.Join(dir, "snapshot.json")); err != nil || strings.HasPrefix(e.Name(), ".") {
			out = append(out, dir)
		}
	}
	srcs := map[string]bool{}
	sessions, _ := os.ReadDir(filepath.Join(root, "sessions"))
	for _, e := range sessions {
		dir := filepath.Join(root, "sessions", e.Name())
		var meta struct {
			Src string `json:"src"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "boxsh-session.json")); err == nil && json.Unmarshal(b, &meta) == nil {
			srcs[meta.Src] = true
		}
		entries, _ := os.ReadDir(dir)
		half := strings.HasPrefix(e.Name(), ".")
		if _, err := os.Stat(filepath.Join(dir, "sandbox.json")); err != nil {
			half = true
		}
		for _, e := range entries {
			half = half || strings.HasPrefix(e.Name(), ".reset") || strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-")
		}
		if half {
			out = append(out, dir)
		}
	}
	empties, _ := os.ReadDir(filepath.Join(root, "sandboxes"))
	for _, e := range empties {
		if dir := filepath.Join(root, "sandboxes", e.Name()); !srcs[dir] {
			out = append(out, dir)
		}
	}
	return out
}

// audited requires a call in sandbox name after the restart to be in the
// audit log and answered by the sandbox's audit tool.
func (f *fleet) audited(name, probe string) {
	f.t.Helper()
	f.run(name, "echo "+probe)
	s := f.m.connect(f.t, f.ctx, "/s/"+name+"/mcp", f.m.token, "")
	defer s.Close()
	var got tool.AuditOutput
	sdkOK(f.t, f.ctx, s, "audit", map[string]any{"last": 20}, &got)
	found := false
	for _, e := range got.Entries {
		found = found || e.Sandbox == name && e.Args["command"] == "echo "+probe
	}
	assert.True(f.t, found, "the audit tool of re-adopted %s lists its call: %+v", name, got.Entries)
	b, err := os.ReadFile(f.audit)
	require.NoError(f.t, err)
	assert.Contains(f.t, string(b), `"command":"echo `+probe+`"`, "the audit log has the call of re-adopted %s", name)
}

// manyFiles is the number of files of the sandbox a fleet operation
// works on: enough for each to take a while.
const manyFiles = 2000

// fillCommand writes manyFiles files holding content in d/.
func fillCommand(content string) string {
	return fmt.Sprintf(`mkdir -p d && cd d && for i in $(seq %d); do echo %s > f$i; done`, manyFiles, content)
}

// filesState is the state of d/ in a sandbox: "A" or "B" when all its
// files hold it, else what they hold.
func (f *fleet) filesState(name string) string {
	f.t.Helper()
	out := f.run(name, `[ -d d ] || { echo none; exit 0; }; n=$(ls d | wc -l); s=$(cat d/* | sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' '); echo "$n $s"`)
	switch strings.TrimSpace(out) {
	case fmt.Sprintf("%d Ax%d", manyFiles, manyFiles):
		return "A"
	case fmt.Sprintf("%d Bx%d", manyFiles, manyFiles):
		return "B"
	}
	return strings.TrimSpace(out)
}

// fleetOp is one operation of the crash test. do starts it, to be killed
// while it runs. check looks at its result after the restart; done tells
// whether it had answered before the kill.
type fleetOp struct {
	name  string
	setup func(f *fleet)
	do    func(f *fleet, i int) error
	check func(f *fleet, i int, done bool)
}

// checkNamed requires sandbox "n", made by an operation, to be whole or
// absent. Whole, its files are in state want ("" for none of d/). It must
// be listed when the operation had answered. Its name must be free for a
// create and a delete afterwards.
func checkNamed(f *fleet, done bool, want string) {
	f.t.Helper()
	if !slices.Contains(f.sandboxes(), "n") {
		require.False(f.t, done, "sandbox n was made before the kill, and is gone after the restart")
		_, err := f.srv.Create(f.ctx, "n", client.FromEmpty)
		require.NoError(f.t, err, "the name of a sandbox whose making was killed")
	} else if want != "" {
		assert.Equal(f.t, want, f.filesState("n"), "sandbox n is whole")
	}
	require.NoError(f.t, f.srv.Delete(f.ctx, "n"))
}

// fleetOps are the operations the crash test kills.
var fleetOps = []fleetOp{{
	name: "snapshot",
	do: func(f *fleet, _ int) error {
		_, err := f.srv.Snapshot(f.ctx, "base", "k")
		return err
	},
	check: func(f *fleet, _ int, done bool) {
		if slices.Contains(f.snapshots(), "k") {
			layer := filepath.Join(f.m.state, "boxsh", "snapshots", "k", "layer", "d")
			entries, err := os.ReadDir(layer)
			require.NoError(f.t, err)
			assert.Len(f.t, entries, manyFiles, "snapshot k is whole")
		} else {
			require.False(f.t, done, "snapshot k was made before the kill, and is gone after the restart")
			var he *client.HTTPError
			require.ErrorAs(f.t, f.srv.DeleteSnapshot(f.ctx, "k"), &he)
			assert.Equal(f.t, http.StatusNotFound, he.StatusCode)
			_, err := f.srv.Snapshot(f.ctx, "base", "k")
			require.NoError(f.t, err, "the name of a snapshot whose making was killed")
		}
		require.NoError(f.t, f.srv.DeleteSnapshot(f.ctx, "k"))
	},
}, {
	name: "restore",
	setup: func(f *fleet) {
		_, err := f.srv.Snapshot(f.ctx, "base", "sa")
		require.NoError(f.t, err)
		f.run("base", `cd d && for i in $(seq `+fmt.Sprint(manyFiles)+`); do echo B > f$i; done`)
		_, err = f.srv.Snapshot(f.ctx, "base", "sb")
		require.NoError(f.t, err)
	},
	do: func(f *fleet, i int) error {
		_, err := f.srv.Restore(f.ctx, "base", restoreTarget(i))
		return err
	},
	check: func(f *fleet, i int, done bool) {
		got := f.filesState("base")
		require.Contains(f.t, []string{"A", "B"}, got, "a restore killed mid-way leaves all the old files or all the snapshot's")
		if done {
			require.Equal(f.t, strings.ToUpper(strings.TrimPrefix(restoreTarget(i), "s")), got, "a restore answered before the kill")
		}
	},
}, {
	name: "fork",
	do: func(f *fleet, _ int) error {
		_, err := f.srv.Fork(f.ctx, "base", "n")
		return err
	},
	check: func(f *fleet, _ int, done bool) { checkNamed(f, done, "A") },
}, {
	name: "create",
	do: func(f *fleet, i int) error {
		from := client.FromWorkspace
		if i%2 == 1 {
			from = client.FromEmpty
		}
		_, err := f.srv.Create(f.ctx, "n", from)
		return err
	},
	check: func(f *fleet, _ int, done bool) { checkNamed(f, done, "") },
}, {
	name: "create-from-snapshot",
	setup: func(f *fleet) {
		_, err := f.srv.Snapshot(f.ctx, "base", "sa")
		require.NoError(f.t, err)
	},
	do: func(f *fleet, _ int) error {
		_, err := f.srv.Create(f.ctx, "n", client.FromSnapshot("sa"))
		return err
	},
	check: func(f *fleet, _ int, done bool) { checkNamed(f, done, "A") },
}}

// restoreTarget is the snapshot the i-th restore goes to: B, then A, and
// so on.
func restoreTarget(i int) string {
	if i%2 == 0 {
		return "sb"
	}
	return "sa"
}

// TestFleetCrashSafety kills a server (SIGKILL) at a random point of a
// fleet operation: before, while or after it runs. The operations are
// snapshot, restore, fork, create, and create from a snapshot. The server,
// started again on the same state directory, must find:
//   - a whole sandbox or snapshot, or none; for a restore, all the old
//     files or all the snapshot's;
//   - the name free, and nothing half-made left on disk;
//   - the sandbox it hosts again audited as a new one.
func TestFleetCrashSafety(t *testing.T) {
	// Rounds per operation: up to maxRounds, at least minRounds, and no
	// more once an operation's rounds took budget (a loaded machine).
	const minRounds, maxRounds, budget = 5, 12, 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	// The operations run side by side, each on a server of its own, so that
	// the suite waits for the longest, not their sum. Each has its own
	// stream of kill points from the seed.
	for n, op := range fleetOps {
		rng := rand.New(rand.NewPCG(seed, uint64(n)))
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			f := startFleet(t, ctx)
			_, err := f.srv.Create(ctx, "base", client.FromWorkspace)
			require.NoError(t, err)
			f.run("base", fillCommand("A"))
			if op.setup != nil {
				op.setup(f)
			}
			// How long the operation takes, uncut, sets the range of the
			// kill points: from before it starts to after it ends.
			began := time.Now()
			require.NoError(t, op.do(f, 0))
			took := time.Since(began)
			op.check(f, 0, true)
			t.Logf("%s takes %v", op.name, took)
			start := time.Now()
			for i := 1; i <= maxRounds && (i <= minRounds || time.Since(start) < budget); i++ {
				delay := time.Duration(rng.Int64N(int64(2 * took)))
				res := make(chan error, 1)
				go func() { res <- op.do(f, i) }()
				time.Sleep(delay) // the kill point: random, not a wait for a state
				f.kill()
				err := <-res
				done := err == nil
				half := f.halfMade()
				f.start()
				t.Logf("round %d: killed after %v, answered before: %v, left half-made: %q", i, delay, done, half)
				for _, p := range half {
					assert.Contains(t, f.m.stderr.String(), p, "the start says what it did with what the killed server left")
				}
				require.Contains(t, f.sandboxes(), "base", "the sandbox the operation worked on is hosted again")
				op.check(f, i, done)
				assert.Empty(t, f.leftOver(), "round %d: the restart left what the killed server half-made", i)
				f.audited("base", fmt.Sprintf("probe-%s-%d", op.name, i))
				if t.Failed() {
					return
				}
			}
		})
	}
}
