package integration

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/internal/tool"
)

// mkWorkspaceDir gives the workspace dir/keep.txt and dir/gone.txt, for a
// sandbox to replace.
func mkWorkspaceDir(t *testing.T, m *manyBoxsh) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(m.workspace, "dir"), 0o755))
	for _, f := range []string{"keep.txt", "gone.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(m.workspace, "dir", f), []byte(f+"\n"), 0o644))
	}
}

// snapState is what the snapshot of A holds: f1 "one", seed.txt deleted
// (a whiteout), dir replaced by one holding new.txt only (an opaque
// directory).
const snapState = "f1=one\nno f2\nno seed\ndir: new.txt\n"

// stateOf describes the files of snapState in a sandbox.
func stateOf(t *testing.T, c *client.Client) string {
	t.Helper()
	res, err := c.Run(context.Background(), `echo "f1=$(cat f1)"; [ -e f2 ] && echo "f2=$(cat f2)" || echo "no f2"; [ -e seed.txt ] && echo seed || echo "no seed"; echo "dir: $(ls dir | tr '\n' ' ' | sed 's/ $//')"`)
	require.NoError(t, err)
	return res.Stdout
}

// TestSnapshotsForkRestore checks snapshots as the Go client drives them:
//   - A's snapshot keeps its writes, deletions (whiteouts) and a replaced
//     directory (opaque);
//   - B, made from the snapshot, sees the snapshot's state only, not A's
//     later writes;
//   - a fork of A sees A as it is now;
//   - restoring A brings it back to the snapshot and restarts its
//     processes;
//   - deleting the snapshot leaves B's files.
func TestSnapshotsForkRestore(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	mkWorkspaceDir(t, m)
	srv := client.NewServer(m.base, m.token, nil)
	ai, err := srv.Create(ctx, "a", "")
	require.NoError(t, err)
	a := srv.Sandbox("a", ai.Token)
	_, err = a.Run(ctx, "echo one > f1; rm seed.txt; rm -r dir; mkdir dir; echo n > dir/new.txt")
	require.NoError(t, err)
	require.Equal(t, snapState, stateOf(t, a))

	snap, err := srv.Snapshot(ctx, "a", "s1")
	require.NoError(t, err)
	assert.Equal(t, "s1", snap.Name)
	assert.Equal(t, "a", snap.Sandbox)
	assert.Equal(t, client.FromWorkspace, snap.Base)
	assert.Positive(t, snap.Bytes)
	t.Logf("snapshot: %d bytes, sandbox paused %v", snap.Bytes, snap.Paused)

	_, err = a.Run(ctx, "echo changed > f1; echo two > f2")
	require.NoError(t, err)
	bi, err := srv.Create(ctx, "b", client.FromSnapshot("s1"))
	require.NoError(t, err)
	assert.Equal(t, "snapshot:s1", bi.From)
	b := srv.Sandbox("b", bi.Token)
	assert.Equal(t, snapState, stateOf(t, b), "B sees the snapshot only")

	ci, err := srv.Fork(ctx, "a", "c")
	require.NoError(t, err)
	assert.Equal(t, "fork:a", ci.From)
	cc := srv.Sandbox("c", ci.Token)
	assert.Equal(t, "f1=changed\nf2=two\nno seed\ndir: new.txt\n", stateOf(t, cc), "a fork sees A now")
	_, err = cc.Run(ctx, "echo c > f2")
	require.NoError(t, err)
	res, err := a.Run(ctx, "cat f2")
	require.NoError(t, err)
	assert.Equal(t, "two\n", res.Stdout, "the fork's writes are its own")

	// Restore: A's files are the snapshot's, its processes restarted; its
	// token still reaches it.
	bg, err := a.StartBackground(ctx, client.ExecRequest{Command: "sleep 300"})
	require.NoError(t, err)
	require.NotEmpty(t, bg.ID)
	ri, err := srv.Restore(ctx, "a", "s1")
	require.NoError(t, err)
	assert.Equal(t, "snapshot:s1", ri.From)
	assert.Equal(t, snapState, stateOf(t, a), "A is back at the snapshot")
	procs, err := a.ListProcesses(ctx)
	require.NoError(t, err)
	assert.Empty(t, procs, "the restore restarted A's processes")
	res, err = a.Run(ctx, "ps -eo args | grep -c '[s]leep 300' || true")
	require.NoError(t, err)
	assert.Equal(t, "0\n", res.Stdout)

	// Changes of a sandbox from a snapshot are against the workspace.
	status, body := m.do(t, http.MethodGet, "/v1/sandboxes/b/changes", m.token, nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	for _, want := range []string{`"path":"f1","kind":"added"`, `"path":"seed.txt","kind":"deleted"`, `"path":"dir","kind":"dir_replaced"`} {
		assert.Contains(t, string(body), want)
	}

	// Listing, refusals, deleting.
	list, err := srv.Snapshots(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "s1", list[0].Name)
	var he *client.HTTPError
	_, err = srv.Snapshot(ctx, "a", "s1")
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusConflict, he.StatusCode)
	for _, bad := range []string{"../x", "", "a/b", ".hidden", strings.Repeat("x", 64)} {
		_, err = srv.Snapshot(ctx, "a", bad)
		require.ErrorAs(t, err, &he, bad)
		assert.Equal(t, http.StatusBadRequest, he.StatusCode, bad)
		assert.Contains(t, he.Detail, "snapshot name", bad)
	}
	_, err = srv.Snapshot(ctx, "zz", "s2")
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusNotFound, he.StatusCode)
	_, err = srv.Create(ctx, "e", client.FromEmpty)
	require.NoError(t, err)
	_, err = srv.Restore(ctx, "e", "s1")
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusConflict, he.StatusCode, "a workspace snapshot on an empty sandbox")
	_, err = srv.Fork(ctx, "a", "b")
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusConflict, he.StatusCode, "a fork to a taken name")

	require.NoError(t, srv.DeleteSnapshot(ctx, "s1"))
	assert.Equal(t, snapState, stateOf(t, b), "B keeps its files")
	_, err = srv.Create(ctx, "d", client.FromSnapshot("s1"))
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusNotFound, he.StatusCode)
	err = srv.DeleteSnapshot(ctx, "s1")
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusNotFound, he.StatusCode)
	_, err = os.Stat(filepath.Join(m.workspace, "f1"))
	assert.True(t, os.IsNotExist(err), "the host's workspace is untouched")
}

// TestSnapshotPausesWrites checks that a snapshot pauses the sandbox's
// processes and continues them. A command appending numbers as fast as it
// can leaves a consistent file in the snapshot: whole lines, no gap. It
// goes on after the snapshot without a gap, since its writes were paused,
// not lost. A process the sandbox stopped itself stays stopped.
func TestSnapshotPausesWrites(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	srv := client.NewServer(m.base, m.token, nil)
	ai, err := srv.Create(ctx, "a", client.FromEmpty)
	require.NoError(t, err)
	a := srv.Sandbox("a", ai.Token)
	writer, err := a.StartBackground(ctx, client.ExecRequest{Command: "i=0; while :; do i=$((i+1)); echo $i >> log; done"})
	require.NoError(t, err)
	_, err = a.Run(ctx, "sleep 1000 & echo $! > stopped.pid; kill -STOP $!")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res, err := a.Run(ctx, "wc -l < log")
		n, _ := strconv.Atoi(strings.TrimSpace(res.Stdout))
		return err == nil && n > 100
	}, 10*time.Second, 20*time.Millisecond)

	snap, err := srv.Snapshot(ctx, "a", "s")
	require.NoError(t, err)
	t.Logf("snapshot of a busy sandbox: %d bytes, paused %v", snap.Bytes, snap.Paused)
	bi, err := srv.Create(ctx, "b", client.FromSnapshot("s"))
	require.NoError(t, err)
	b := srv.Sandbox("b", bi.Token)
	// awk: every line is the one before plus one.
	check := `awk 'NR != $0 { print "gap at line " NR ": " $0; exit 1 } END { print NR }' log`
	res, err := b.Run(ctx, check)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "the snapshot's log: %s", res.Stdout)
	atSnap, _ := strconv.Atoi(strings.TrimSpace(res.Stdout))
	require.Positive(t, atSnap)

	require.Eventually(t, func() bool {
		res, err := a.Run(ctx, "wc -l < log")
		n, _ := strconv.Atoi(strings.TrimSpace(res.Stdout))
		return err == nil && n > atSnap+100
	}, 10*time.Second, 20*time.Millisecond, "the writer goes on after the snapshot")
	_, err = a.KillProcess(ctx, writer.ID, "KILL")
	require.NoError(t, err)
	res, err = a.Run(ctx, check)
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "A's log has no gap: %s", res.Stdout)
	res, err = a.Run(ctx, "awk '{print $3}' /proc/$(cat stopped.pid)/stat")
	require.NoError(t, err)
	assert.Equal(t, "T\n", res.Stdout, "a process the sandbox stopped stays stopped")
}

// TestSnapshotsOutOfReach checks that a sandbox reaches neither the
// snapshots nor other sandboxes' layers: they are outside its mount
// namespace.
func TestSnapshotsOutOfReach(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	srv := client.NewServer(m.base, m.token, nil)
	ai, err := srv.Create(ctx, "a", "")
	require.NoError(t, err)
	a := srv.Sandbox("a", ai.Token)
	_, err = a.Run(ctx, "echo secret > s.txt")
	require.NoError(t, err)
	_, err = srv.Snapshot(ctx, "a", "s1")
	require.NoError(t, err)
	bi, err := srv.Create(ctx, "b", client.FromSnapshot("s1"))
	require.NoError(t, err)
	b := srv.Sandbox("b", bi.Token)

	snaps := filepath.Join(m.state, "boxsh", "snapshots")
	layer := filepath.Join(snaps, "s1", "layer")
	require.FileExists(t, filepath.Join(layer, "s.txt"), "the snapshot is where the test looks")
	run := func(c *client.Client, command string) string {
		t.Helper()
		res, err := c.Run(ctx, command+" 2>&1")
		require.NoError(t, err)
		return res.Stdout
	}
	for _, c := range []*client.Client{a, b} {
		assert.Contains(t, run(c, "cat "+layer+"/s.txt"), "No such file")
		assert.Contains(t, run(c, "ls "+snaps), "No such file")
		assert.Equal(t, "0\n", run(c, "grep -c snapshots /proc/self/mountinfo"), "no mount of the snapshots")
	}
	assert.Contains(t, run(b, "ls "+ai.Workspace), "No such file", "B reaches A's layer")
	assert.Contains(t, run(a, "ls "+bi.Workspace), "No such file", "A reaches B's layer")
}

// TestManageMCP drives the management MCP endpoint with the official SDK:
// create, snapshot, fork, restore, changes, diff, apply, list and delete. A
// refusal is a failed result naming why. A sandbox's token cannot reach the
// endpoint.
func TestManageMCP(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := startMany(t, ctx)
	s := m.connect(t, ctx, "/v1/manage/mcp", m.token, "")
	tools, err := s.ListTools(ctx, nil)
	require.NoError(t, err)
	var toolNames []string
	for _, tl := range tools.Tools {
		toolNames = append(toolNames, tl.Name)
	}
	assert.Equal(t, tool.Names(tool.ManageSet, nil), toolNames)

	var a sandboxInfo
	sdkOK(t, ctx, s, "create_sandbox", map[string]any{"name": "a"}, &a)
	require.NotEmpty(t, a.Token)
	sa := m.connect(t, ctx, a.Endpoint, a.Token, "")
	sh(t, ctx, sa, "echo one > f1")
	var snap struct {
		Name     string  `json:"name"`
		PausedMS float64 `json:"paused_ms"`
	}
	sdkOK(t, ctx, s, "snapshot_sandbox", map[string]any{"sandbox": "a", "name": "s1"}, &snap)
	assert.Equal(t, "s1", snap.Name)
	sh(t, ctx, sa, "echo two > f1")
	var f sandboxInfo
	sdkOK(t, ctx, s, "fork_sandbox", map[string]any{"sandbox": "a", "name": "f"}, &f)
	sf := m.connect(t, ctx, f.Endpoint, f.Token, "")
	assert.Equal(t, "two\n", sh(t, ctx, sf, "cat f1"))
	var b sandboxInfo
	sdkOK(t, ctx, s, "create_sandbox", map[string]any{"name": "b", "from": "snapshot:s1"}, &b)
	sb := m.connect(t, ctx, b.Endpoint, b.Token, "")
	assert.Equal(t, "one\n", sh(t, ctx, sb, "cat f1"))
	sdkOK(t, ctx, s, "restore_sandbox", map[string]any{"sandbox": "a", "snapshot": "s1"}, nil)
	assert.Equal(t, "one\n", sh(t, ctx, sa, "cat f1"), "A restored, through the same MCP session")

	var changes struct {
		Changes []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	}
	sdkOK(t, ctx, s, "sandbox_changes", map[string]any{"sandbox": "f"}, &changes)
	require.Len(t, changes.Changes, 1)
	assert.Equal(t, "f1", changes.Changes[0].Path)
	var diff struct {
		Diff string `json:"diff"`
	}
	sdkOK(t, ctx, s, "sandbox_diff", map[string]any{"sandbox": "f"}, &diff)
	assert.Contains(t, diff.Diff, "+two")
	sdkOK(t, ctx, s, "apply_sandbox", map[string]any{"sandbox": "f", "paths": []string{"f1"}}, nil)
	got, err := os.ReadFile(filepath.Join(m.workspace, "f1"))
	require.NoError(t, err)
	assert.Equal(t, "two\n", string(got))

	var snaps struct {
		Snapshots []struct {
			Name string `json:"name"`
		} `json:"snapshots"`
	}
	sdkOK(t, ctx, s, "list_snapshots", map[string]any{}, &snaps)
	require.Len(t, snaps.Snapshots, 1)

	// A sandbox's figures through management, as its own tool gives them.
	var st tool.StatsOutput
	sdkOK(t, ctx, s, "sandbox_stats", map[string]any{"sandbox": "a"}, &st)
	assert.Positive(t, st.Processes, "the sandbox's boxsh-init at least")
	assert.Positive(t, st.UptimeSeconds)
	res0 := sdkCall(t, ctx, s, "sandbox_stats", map[string]any{"sandbox": "nosuch"})
	assert.True(t, res0.IsError, "an unknown sandbox's stats are refused")
	var list struct {
		Sandboxes []sandboxInfo `json:"sandboxes"`
	}
	sdkOK(t, ctx, s, "list_sandboxes", map[string]any{}, &list)
	assert.Equal(t, []string{"a", "b", "f"}, names(list.Sandboxes))

	res := sdkCall(t, ctx, s, "create_sandbox", map[string]any{"name": "a"})
	assert.True(t, res.IsError)
	assert.Contains(t, sdkText(t, res), "sandbox a exists")
	res = sdkCall(t, ctx, s, "snapshot_sandbox", map[string]any{"sandbox": "a", "name": "../up"})
	assert.True(t, res.IsError)
	assert.Contains(t, sdkText(t, res), "snapshot name")
	_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "delete_sandbox", Arguments: map[string]any{}})
	assert.Error(t, err, "a missing required argument is a protocol error")

	sdkOK(t, ctx, s, "delete_snapshot", map[string]any{"name": "s1"}, nil)
	sdkOK(t, ctx, s, "delete_sandbox", map[string]any{"name": "b"}, nil)
	sdkOK(t, ctx, s, "list_sandboxes", map[string]any{}, &list)
	assert.Equal(t, []string{"a", "f"}, names(list.Sandboxes))

	// A sandbox's token reaches neither the management MCP nor REST.
	for _, path := range []string{"/v1/manage/mcp", "/v1/snapshots"} {
		status, _ := m.do(t, http.MethodPost, path, a.Token, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
		assert.Equal(t, http.StatusUnauthorized, status, path)
	}
	status, _ := m.do(t, http.MethodPost, "/v1/sandboxes/a/restore", a.Token, map[string]any{"snapshot": "s1"})
	assert.Equal(t, http.StatusUnauthorized, status)
	var bo tool.BashOutput
	sdkOK(t, ctx, sa, "bash", map[string]any{"command": "true"}, &bo)
}
