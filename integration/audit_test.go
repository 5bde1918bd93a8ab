package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/internal/tool"
)

// eachServerArgs is eachServer with arguments made for each server (both
// plain and sandboxed), for example a file of the subtest's own.
func eachServerArgs(t *testing.T, argsFor func(t *testing.T, sandbox bool) []string, fn func(t *testing.T, ctx context.Context, s *mcp.ClientSession, sandbox bool)) {
	for _, sandbox := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "sandbox"}[sandbox]
		for _, transport := range []string{"stdio", "http"} {
			t.Run(transport+"/"+name, func(t *testing.T) {
				if sandbox {
					requireRootless(t)
				}
				ctx := testContext(t)
				args := argsFor(t, sandbox)
				if sandbox {
					args = append([]string{"--sandbox"}, args...)
				}
				var s *mcp.ClientSession
				if transport == "stdio" {
					s = sdkStdio(t, ctx, args...)
				} else {
					s = startHTTP(t, ctx, args...).sdkHTTP(t, ctx, "")
				}
				fn(t, ctx, s, sandbox)
			})
		}
	}
}

// readAudit reads an audit log's entries with boxsh audit --json, which
// must find every line an entry.
func readAudit(t *testing.T, path string) []tool.AuditEntry {
	t.Helper()
	r := runBoxsh(t, testContext(t), "", "audit", path, "--json")
	require.Equal(t, 0, r.code(), "boxsh audit --json: %s", r.stderr)
	var entries []tool.AuditEntry
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &entries), r.stdout)
	return entries
}

// TestAuditLog checks the audit log of tool calls:
//   - the front records every tool call, with a summary of its arguments
//     that holds no file contents, stdin or env values;
//   - the audit tool returns the latest entries;
//   - the sandbox cannot reach the log.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	logs := map[string]string{}
	eachServerArgs(t, func(t *testing.T, sandbox bool) []string {
		logs[t.Name()] = filepath.Join(t.TempDir(), "audit.jsonl")
		return []string{"--audit", logs[t.Name()]}
	}, func(t *testing.T, ctx context.Context, s *mcp.ClientSession, sandbox bool) {
		path := logs[t.Name()]
		var out tool.BashOutput
		sdkCall(t, ctx, s, "bash", map[string]any{"command": "cat; echo $TOKEN >/dev/null; exit 4", "env": map[string]string{"TOKEN": "tok-value-1"}, "stdin": "stdin-secret-2"})
		dir := "/tmp"
		file := filepath.Join(dir, fmt.Sprintf("boxsh-audit-%d", time.Now().UnixNano()))
		sdkOK(t, ctx, s, "write", map[string]any{"path": file, "content": "content-secret-3"}, nil)
		sdkOK(t, ctx, s, "read", map[string]any{"path": file}, nil)
		sdkStructured(t, sdkCall(t, ctx, s, "bash", map[string]any{"command": "sleep 5", "timeout": 0.2}), &out)
		require.Equal(t, -1, out.ExitCode)

		if sandbox {
			// The log is outside every bind: not there to write, truncate
			// or replace.
			sdkStructured(t, sdkCall(t, ctx, s, "bash", map[string]any{"command": "echo forged >> " + path + "; truncate -s 0 " + path + "; ls -d " + filepath.Dir(path)}), &out)
			assert.NotEqual(t, 0, out.ExitCode)
			assert.Contains(t, out.Stderr, "No such file or directory", "%+v", out)
		}

		var got tool.AuditOutput
		sdkOK(t, ctx, s, "audit", map[string]any{"last": 10}, &got)
		assert.Equal(t, path, got.Path)
		var tools []string
		for _, e := range got.Entries {
			tools = append(tools, e.Tool)
			assert.Equal(t, tool.AuditCall, e.Kind)
			if strings.HasPrefix(t.Name(), "TestAuditLog/stdio") {
				assert.Equal(t, "stdio", e.Client)
			} else {
				// A session's digest, or the address of a client
				// without one (the SDK's newest protocol).
				assert.Regexp(t, `^http (session [0-9a-f]{12}|127\.0\.0\.1:\d+)$`, e.Client)
			}
		}
		want := []string{"bash", "write", "read", "bash"}
		if sandbox {
			want = append(want, "bash")
		}
		require.Equal(t, want, tools)
		bash, write, timedOut := got.Entries[0], got.Entries[1], got.Entries[3]
		assert.Equal(t, "cat; echo $TOKEN >/dev/null; exit 4", bash.Args["command"])
		assert.Equal(t, []any{"TOKEN"}, bash.Args["env"])
		require.NotNil(t, bash.ExitCode)
		assert.Equal(t, 4, *bash.ExitCode)
		assert.True(t, bash.IsError)
		assert.Positive(t, bash.OutputBytes)
		assert.Equal(t, file, write.Args["path"])
		assert.True(t, timedOut.TimedOut)
		assert.GreaterOrEqual(t, timedOut.DurationMS, int64(200))

		// The file: the same entries and the audit call, 0600, none of
		// the secrets.
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, secret := range []string{"tok-value-1", "stdin-secret-2", "content-secret-3"} {
			assert.NotContains(t, string(b), secret)
		}
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		entries := readAudit(t, path)
		require.Len(t, entries, len(want)+1)
		assert.Equal(t, "audit", entries[len(entries)-1].Tool)

		r := runBoxsh(t, ctx, "", "audit", path)
		require.Equal(t, 0, r.code(), r.stderr)
		assert.Contains(t, r.stdout, ` bash command="cat; echo $TOKEN >/dev/null; exit 4" env=["TOKEN"] sizes={stdin:16} exit 4 `)
		assert.Contains(t, r.stdout, ` write path="`+file+`" sizes={content:18} ok `)
		assert.Contains(t, r.stdout, ` exit -1 timed-out `)
		_ = os.Remove(file)
	})
}

// TestAuditRefusesWritableLog checks that a log in a directory the sandbox
// can write is refused. The sandbox could change the record of what it did.
func TestAuditRefusesWritableLog(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(filepath.Join(dir, "sub"), link))
	cow := filepath.Join(t.TempDir(), "changes")
	cache := t.TempDir()
	for _, c := range []struct {
		args []string
		log  string
	}{
		{[]string{"--bind", "wr:" + dir}, filepath.Join(dir, "audit.jsonl")},
		{[]string{"--bind", "wr:" + dir}, filepath.Join(dir, "sub", "audit.jsonl")},
		{[]string{"--bind", "wr:" + dir}, filepath.Join(link, "audit.jsonl")},
		{[]string{"--bind", "cow:" + dir + ":" + cow}, filepath.Join(cow, "audit.jsonl")},
		{[]string{"--cache", cache}, filepath.Join(cache, "audit.jsonl")},
	} {
		for _, mode := range [][]string{{"--rpc"}, {"-c", "true"}} {
			args := append(append(append([]string{"--sandbox"}, c.args...), "--audit", c.log), mode...)
			r := runBoxshIn(t, ctx, t.TempDir(), "", nil, args...)
			assert.Equal(t, 2, r.code(), "%v: %s", args, r.stderr)
			assert.Contains(t, r.stderr, "which the sandbox can write: it could change or remove the record of what it did", args)
			_, err := os.Lstat(c.log)
			assert.True(t, os.IsNotExist(err), "%s not made", c.log)
		}
	}
	// A read-only bind of its directory is fine: the sandbox may read
	// what it did, not change it.
	log := filepath.Join(dir, "audit.jsonl")
	r := runBoxshIn(t, ctx, t.TempDir(), "", nil, "--sandbox", "--bind", "ro:"+dir, "--audit", log, "-c", "cat "+log+" >/dev/null && echo x >> "+log)
	assert.NotEqual(t, 0, r.code())
	assert.Contains(t, r.stderr, "Read-only file system")
	entries := readAudit(t, log)
	require.Len(t, entries, 1)
	assert.Equal(t, tool.AuditShell, entries[0].Kind)
}

// TestAuditShellMode checks that shell mode records each run through boxsh,
// plain and sandboxed. Plain, boxsh then runs the shell as a child, to see
// it end.
func TestAuditShellMode(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	r := runBoxsh(t, ctx, "", "--audit", path, "-c", "echo plain; exit 5")
	assert.Equal(t, 5, r.code())
	assert.Equal(t, "plain\n", r.stdout)
	r = runBoxsh(t, ctx, "", "--audit", path, "--", "sh", "-c", "kill -TERM $$")
	assert.Equal(t, 128+int(syscall.SIGTERM), r.code())
	r = runBoxsh(t, ctx, "", "--audit", path, "--", "/no/such/program")
	assert.Equal(t, 127, r.code())
	entries := readAudit(t, path)
	require.Len(t, entries, 3)
	for i, want := range []struct {
		argv []any
		code int
	}{{[]any{"/bin/sh", "-c", "echo plain; exit 5"}, 5}, {[]any{"sh", "-c", "kill -TERM $$"}, 143}, {[]any{"/no/such/program"}, 127}} {
		e := entries[i]
		assert.Equal(t, tool.AuditShell, e.Kind)
		assert.Equal(t, "shell", e.Client)
		assert.Equal(t, want.argv, e.Args["args"])
		require.NotNil(t, e.ExitCode)
		assert.Equal(t, want.code, *e.ExitCode)
	}

	t.Run("sandbox", func(t *testing.T) {
		requireRootless(t)
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		r := runBoxsh(t, ctx, "", "--sandbox", "--audit", path, "-c", "echo boxed; exit 6")
		assert.Equal(t, 6, r.code(), r.stderr)
		assert.Equal(t, "boxed\n", r.stdout)
		entries := readAudit(t, path)
		require.Len(t, entries, 1)
		assert.Equal(t, []any{"/bin/sh", "-c", "echo boxed; exit 6"}, entries[0].Args["args"])
		assert.Equal(t, 6, *entries[0].ExitCode)
	})
}

// TestAuditTrySession checks that a copy-on-write session keeps its log by
// default, in the session's directory. So users of boxsh changes can see
// what made the changes.
func TestAuditTrySession(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	base := t.TempDir()
	proj := filepath.Join(base, "proj")
	require.NoError(t, os.Mkdir(proj, 0o755))
	r := runBoxshIn(t, ctx, proj, "", nil, "--try", "-c", "echo new > made.txt")
	require.Equal(t, 0, r.code(), r.stderr)
	tries, err := filepath.Glob(filepath.Join(base, ".boxsh-try-*"))
	require.NoError(t, err)
	require.Len(t, tries, 1)
	dst := filepath.Join(tries[0], "work")
	fi, err := os.Stat(filepath.Join(tries[0], "boxsh-audit.jsonl"))
	require.NoError(t, err, "the session's log")
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	r = runBoxsh(t, ctx, "", "audit", dst)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Regexp(t, `^\S+ shell shell args=\["/bin/sh" "-c" "echo new > made.txt"\] exit 0 \d+ms\n$`, r.stdout)
	r = runBoxsh(t, ctx, "", "changes", dst)
	assert.Contains(t, r.stdout, "made.txt")

	// --no-audit: none.
	r = runBoxshIn(t, ctx, proj, "", nil, "--try", "--no-audit", "-c", "true")
	require.Equal(t, 0, r.code(), r.stderr)
	all, _ := filepath.Glob(filepath.Join(base, ".boxsh-try-*", "boxsh-audit.jsonl"))
	assert.Len(t, all, 1)
}

// TestAuditKilledServer checks that kill -9 of a server logging calls as
// fast as a client sends them loses at most the call in flight. Every line
// of the log is an entry, once the next boxsh has opened it and dropped the
// one line a kill could cut.
func TestAuditKilledServer(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for round := range 3 {
		cmd := exec.CommandContext(ctx, boxshPath(), "--rpc", "--audit", path)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		go func() { _, _ = io.Copy(io.Discard, bufio.NewReader(stdout)) }()
		go func() {
			w := bufio.NewWriter(stdin)
			for i := 0; ; i++ {
				if _, err := w.Write(requestJSON(i, "tools/call", callParams("stat", map[string]any{"path": "/" + strings.Repeat("x", i%3000)}))); err != nil {
					return
				}
				_ = w.WriteByte('\n')
				if i%64 == 0 && w.Flush() != nil {
					return
				}
			}
		}()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if fi, err := os.Stat(path); err == nil && fi.Size() > int64(round+1)<<19 {
				break
			}
		}
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
	}
	r := runBoxsh(t, ctx, "", "--audit", path, "-c", "true")
	require.Equal(t, 0, r.code(), r.stderr)
	entries := readAudit(t, path)
	assert.Greater(t, len(entries), 1000)
	assert.Equal(t, tool.AuditShell, entries[len(entries)-1].Kind)
}

// TestClientAudit checks the Go client's typed call of the audit tool.
func TestClientAudit(t *testing.T) {
	t.Parallel()
	for _, sandboxed := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "sandbox"}[sandboxed], func(t *testing.T) {
			if sandboxed {
				requireRootless(t)
			}
			ctx := testContext(t)
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			c := startClient(t, client.Options{Dir: t.TempDir(), Sandbox: sandboxed, Args: []string{"--audit", path}})
			_, err := c.Exec(ctx, client.ExecRequest{Command: "echo audited"})
			require.NoError(t, err)
			out, err := c.Audit(ctx, 5)
			require.NoError(t, err)
			assert.Equal(t, path, out.Path)
			require.Len(t, out.Entries, 1)
			assert.Equal(t, "bash", out.Entries[0].Tool)
			assert.Equal(t, "echo audited", out.Entries[0].Args["command"])

			plain := startClient(t, client.Options{Dir: t.TempDir()})
			_, err = plain.Audit(ctx, 0)
			var te *client.ToolError
			require.ErrorAs(t, err, &te)
			assert.Contains(t, err.Error(), "keeps no audit log")
		})
	}
}

// TestAuditDefaultLog checks that boxsh audit without an argument prints
// the log of the latest session whose source is the current directory. It
// says in one line when there is none.
func TestAuditDefaultLog(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	base := t.TempDir()
	proj, other := filepath.Join(base, "proj"), filepath.Join(base, "other")
	require.NoError(t, os.Mkdir(proj, 0o755))
	require.NoError(t, os.Mkdir(other, 0o755))
	r := runBoxshIn(t, ctx, proj, "", nil, "audit")
	assert.Equal(t, 1, r.code())
	assert.Equal(t, "boxsh: no audit log: no session of "+proj+" has one (boxsh audit FILE|DST names one; boxsh sessions lists the sessions)\n", r.stderr)
	assert.Empty(t, r.stdout)

	r = runBoxshIn(t, ctx, proj, "", nil, "--try", "-c", "echo in-proj")
	require.Equal(t, 0, r.code(), r.stderr)
	r = runBoxshIn(t, ctx, other, "", nil, "--try", "-c", "echo in-other")
	require.Equal(t, 0, r.code(), r.stderr)
	r = runBoxshIn(t, ctx, proj, "", nil, "audit")
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Regexp(t, `^\S+ shell shell args=\["/bin/sh" "-c" "echo in-proj"\] exit 0 \d+ms\n$`, r.stdout, "proj's session, not other's later one")
	r = runBoxshIn(t, ctx, other, "", nil, "audit", "--json")
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, `"echo in-other"`)
	assert.NotContains(t, r.stdout, "in-proj")
	r = runBoxshIn(t, ctx, proj, "", nil, "audit", "a", "b")
	assert.Equal(t, 2, r.code())
	assert.Contains(t, r.stderr, `unexpected argument "b": expected boxsh audit [FILE|DST] [--json]`)
}
