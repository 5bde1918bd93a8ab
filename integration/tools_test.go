package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// listOf calls list and decodes its result, checking that the text block
// is the JSON of structuredContent.
func listOf(t *testing.T, s *server, args map[string]any) tool.ListOutput {
	t.Helper()
	r := s.call("list", args).toolResult(t)
	require.False(t, r.IsError, "list %v: %s", args, r.text())
	require.JSONEq(t, string(r.StructuredContent), r.text())
	var out tool.ListOutput
	require.NoError(t, json.Unmarshal(r.StructuredContent, &out))
	return out
}

// statOf calls stat and decodes its result.
func statOf(t *testing.T, s *server, path string) tool.StatOutput {
	t.Helper()
	r := s.call("stat", map[string]any{"path": path}).toolResult(t)
	require.False(t, r.IsError, "stat %s: %s", path, r.text())
	require.JSONEq(t, string(r.StructuredContent), r.text())
	var out tool.StatOutput
	require.NoError(t, json.Unmarshal(r.StructuredContent, &out))
	return out
}

// entries maps a listing's entries by name.
func entries(out tool.ListOutput) map[string]tool.ListEntry {
	m := map[string]tool.ListEntry{}
	for _, e := range out.Entries {
		m[e.Name] = e
	}
	return m
}

// toolNames lists the tools of a tools/list answer.
func toolNames(t *testing.T, m message) []string {
	t.Helper()
	require.Nil(t, m.Error, "tools/list failed: %s", m.Raw)
	var r struct {
		Tools []struct {
			Name         string         `json:"name"`
			InputSchema  map[string]any `json:"inputSchema"`
			OutputSchema map[string]any `json:"outputSchema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &r))
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
		if tl.Name == "list" || tl.Name == "stat" {
			assert.Equal(t, []any{"path"}, tl.InputSchema["required"], tl.Name)
			assert.Equal(t, "object", tl.OutputSchema["type"], tl.Name)
		}
	}
	return names
}

// TestToolsListShowsNewToolsToNewClients checks that a client of boxsh
// v3's protocol version sees its nine tools (the v3.0.0 and v4.1.0
// conformance suites count them), and a later client list and stat too.
func TestToolsListShowsNewToolsToNewClients(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := startServer(t, ctx, serverOptions{})
	assert.ElementsMatch(t, allToolNames, toolNames(t, s.roundTrip("tools/list", nil)), "no initialize")

	s = startServer(t, ctx, serverOptions{})
	s.roundTrip("initialize", map[string]any{"protocolVersion": "2024-11-05"})
	assert.ElementsMatch(t, allToolNames, toolNames(t, s.roundTrip("tools/list", nil)), "2024-11-05")
	assert.False(t, s.call("stat", map[string]any{"path": "/"}).toolResult(t).IsError, "unlisted tools can still be called")

	s = startServer(t, ctx, serverOptions{})
	s.roundTrip("initialize", map[string]any{"protocolVersion": "2025-06-18"})
	assert.ElementsMatch(t, allToolNamesNow, toolNames(t, s.roundTrip("tools/list", nil)), "2025-06-18")
}

// project makes a directory with files of several kinds.
func project(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"README.md": "# p\n", "src/main.go": "package main\n", "src/lib/a.go": "package lib\n", ".env": "SECRET=1\n", "keys/id": "key\n",
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Join(dir, "README.md"), 0o600))
	require.NoError(t, os.Symlink("src/main.go", filepath.Join(dir, "main")))
	return dir
}

// serverArgs are the arguments of a plain server, or of a sandboxed one
// that sees dir (read-write) at its own path.
func serverArgs(sandbox bool, dir string) []string {
	if !sandbox {
		return nil
	}
	return []string{"--sandbox", "--bind", "wr:" + dir}
}

// testListStat checks list and stat on a project, plain or sandboxed.
func testListStat(t *testing.T, sandbox bool) {
	ctx := testContext(t)
	dir := project(t)
	s := startServer(t, ctx, serverOptions{dir: dir, args: serverArgs(sandbox, dir)})

	out := listOf(t, s, map[string]any{"path": dir})
	assert.Equal(t, dir, out.Path)
	assert.False(t, out.Truncated)
	// The sandbox adds placeholders of protected paths (.vscode, ...) to
	// a writable project: list shows what the sandbox's shell sees.
	ls := s.call("bash", map[string]any{"args": []string{"sh", "-c", "LC_ALL=C ls -A | tr '\\n' ' '"}}).bash(t)
	assert.Equal(t, ls.Stdout, strings.Join(entryNames(out), " ")+" ", "list names what ls -A does")
	assert.Subset(t, entryNames(out), []string{".env", "README.md", "keys", "main", "src"})
	e := entries(out)
	assert.Equal(t, "file", e["README.md"].Type)
	assert.EqualValues(t, 4, e["README.md"].Size)
	assert.Equal(t, "0600", e["README.md"].Mode)
	assert.NotEmpty(t, e["README.md"].Mtime)
	assert.Equal(t, "symlink", e["main"].Type)
	assert.Equal(t, "src/main.go", e["main"].Target)
	assert.Equal(t, "dir", e["src"].Type)

	out = listOf(t, s, map[string]any{"path": "src", "depth": 3})
	assert.Equal(t, filepath.Join(dir, "src"), out.Path, "relative to the working directory")
	assert.Equal(t, []string{"lib", "lib/a.go", "main.go"}, entryNames(out))
	out = listOf(t, s, map[string]any{"path": "src", "depth": 3, "limit": 2})
	assert.Equal(t, []string{"lib", "lib/a.go"}, entryNames(out))
	assert.True(t, out.Truncated)
	out = listOf(t, s, map[string]any{"path": "src", "limit": 1e12})
	assert.Len(t, out.Entries, 2, "a huge limit is lowered, not refused")
	assert.False(t, out.Truncated)

	st := statOf(t, s, filepath.Join(dir, "src", "main.go"))
	require.NotNil(t, st.Size)
	assert.Equal(t, tool.StatOutput{Path: filepath.Join(dir, "src", "main.go"), Exists: true, Type: "file", Size: st.Size, Mode: "0644", Mtime: st.Mtime}, st)
	assert.EqualValues(t, 13, *st.Size)
	st = statOf(t, s, "main")
	assert.Equal(t, "symlink", st.Type)
	assert.Equal(t, "src/main.go", st.Target)
	assert.Equal(t, tool.StatOutput{Path: filepath.Join(dir, "none"), Exists: false}, statOf(t, s, filepath.Join(dir, "none")))

	requireToolFailure(t, s.call("list", map[string]any{"path": filepath.Join(dir, "none")}),
		"list: cannot open directory: "+filepath.Join(dir, "none")+": no such file or directory")
	requireToolFailure(t, s.call("list", map[string]any{"path": filepath.Join(dir, "README.md")}), "not a directory")
}

func entryNames(out tool.ListOutput) []string {
	var n []string
	for _, e := range out.Entries {
		n = append(n, e.Name)
	}
	return n
}

func TestListStatPlain(t *testing.T) {
	t.Parallel()
	testListStat(t, false)
}

func TestListStatSandbox(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	testListStat(t, true)
}

// TestListStatBadInput checks the arguments refused before a tool runs:
// -32602 errors naming the field.
func TestListStatBadInput(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"list", map[string]any{"path": ".", "depth": -1}, "list tool: field depth must be at least 0, got -1"},
		{"list", map[string]any{"path": ".", "limit": -1}, "list tool: field limit must be at least 0, got -1"},
		{"list", map[string]any{"path": ".", "depth": 1.5}, "list tool: field depth must be an integer, got 1.5"},
		{"list", map[string]any{"depth": 1}, "list tool missing string field: path"},
		{"stat", map[string]any{}, "stat tool missing string field: path"},
		{"stat", map[string]any{"path": []string{"a"}}, "stat tool: field path must be a string, got array"},
		{"bash", map[string]any{"cwd": "/"}, "bash tool missing string field: command (or array field: args)"},
		{"bash", map[string]any{"command": "id", "args": []string{"id"}}, "bash tool: fields command and args are exclusive: give only one"},
		{"bash", map[string]any{"args": []string{}}, "bash tool: field args must have at least 1 item(s)"},
		{"bash", map[string]any{"args": "id"}, "bash tool: field args must be an array, got string"},
		{"bash", map[string]any{"args": []string{"-c"}}, `bash tool: args[0] must name a program, got "-c", which begins with -`},
		{"bash", map[string]any{"args": []string{""}}, "bash tool: args[0] must name a program, got an empty string"},
		{"bash", map[string]any{"args": []string{"echo", "a\x00b"}}, "bash tool: args[1] holds a NUL byte"},
	} {
		e := s.call(c.name, c.args).rpcErr(t)
		assert.Equal(t, -32602, e.Code, "%s %v", c.name, c.args)
		assert.Equal(t, c.want, e.Message, "%s %v", c.name, c.args)
	}
	s.requireServing()
}

// testBashArgs runs argvs that a shell would interpret, with the other
// arguments of bash calls.
func testBashArgs(t *testing.T, sandbox bool) {
	dir := t.TempDir()
	s := startServer(t, testContext(t), serverOptions{dir: dir, args: serverArgs(sandbox, dir)})
	tricky := []string{"$HOME", "*", "a b", "it's", "`id`", "$(id)", ";", ">x", "", "-n"}
	out := s.call("bash", map[string]any{"args": append([]string{"printf", "[%s]"}, tricky...)}).bash(t)
	want := ""
	for _, a := range tricky {
		want += "[" + a + "]"
	}
	assert.Equal(t, want, out.Stdout, out.Stderr)
	_, err := os.Stat(filepath.Join(dir, "x"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no redirection")

	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	out = s.call("bash", map[string]any{"args": []string{"sh", "-c", `pwd; echo "$0 $V"; cat; exit 3`, "zero"},
		"cwd": filepath.Join(dir, "sub"), "env": map[string]string{"V": "v"}, "stdin": "in\n"}).bash(t)
	assert.Equal(t, fmt.Sprintf("%s\nzero v\nin\n", filepath.Join(dir, "sub")), out.Stdout)
	assert.Equal(t, 3, out.ExitCode)

	out = s.call("bash", map[string]any{"args": []string{"sleep", "20"}, "timeout": 0.3}).bash(t)
	assert.Equal(t, -1, out.ExitCode, "the timeout applies")
	out = s.call("bash", map[string]any{"args": []string{"boxsh-no-such-program"}}).bash(t)
	assert.Equal(t, 127, out.ExitCode)
	assert.Contains(t, out.Stderr, "boxsh-no-such-program")
}

func TestBashArgsPlain(t *testing.T) {
	t.Parallel()
	testBashArgs(t, false)
}

func TestBashArgsSandbox(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	testBashArgs(t, true)
}

// TestListStatPolicy checks list and stat against the sandbox's file rules:
//   - a denied file or directory is shown as the sandbox's own shell sees
//     it, an empty mode-0000 placeholder, and marked with the rule;
//   - its content, real size and entries are not revealed;
//   - listing a denied directory is refused naming the rule, as read is;
//   - paths outside the binds do not exist.
func TestListStatPolicy(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	dir := project(t)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".boxsh"), 0o755))
	policyFile := filepath.Join(dir, ".boxsh", "policy.json")
	require.NoError(t, os.WriteFile(policyFile, []byte(`{"filesystem": {"denyRead": ["keys"]}}`), 0o644))
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret\n"), 0o600))

	s := startServer(t, ctx, serverOptions{dir: dir, args: []string{"--sandbox", "--bind", "ro:" + dir}})
	out := listOf(t, s, map[string]any{"path": dir, "depth": 2})
	e := entries(out)
	env := e[".env"]
	assert.Equal(t, "denyRead .env (default)", env.DeniedBy)
	assert.Equal(t, "file", env.Type)
	assert.EqualValues(t, 0, env.Size, "the placeholder's size, not the file's")
	assert.Equal(t, "0000", env.Mode)
	keys := e["keys"]
	assert.Equal(t, "denyRead keys ("+policyFile+")", keys.DeniedBy)
	assert.Equal(t, "dir", keys.Type)
	assert.Equal(t, "permission denied", keys.Error)
	assert.NotContains(t, entryNames(out), "keys/id", "a denied directory's entries are not listed")
	assert.Empty(t, e["src"].DeniedBy)
	assert.Empty(t, e["README.md"].DeniedBy)

	// The sandbox's shell sees the same.
	sh := s.call("bash", map[string]any{"args": []string{"stat", "-c", "%s %a", ".env"}}).bash(t)
	assert.Equal(t, "0 0\n", sh.Stdout, sh.Stderr)

	st := statOf(t, s, filepath.Join(dir, ".env"))
	assert.True(t, st.Exists)
	assert.Equal(t, "denyRead .env (default)", st.DeniedBy)
	assert.EqualValues(t, 0, *st.Size)
	assert.Equal(t, "denyRead keys ("+policyFile+")", statOf(t, s, filepath.Join(dir, "keys")).DeniedBy)

	requireToolFailure(t, s.call("list", map[string]any{"path": filepath.Join(dir, "keys")}),
		"list: cannot open directory: "+filepath.Join(dir, "keys")+": permission denied (refused by the sandbox's policy: denyRead keys ("+policyFile+"))")
	requireToolFailure(t, s.call("stat", map[string]any{"path": filepath.Join(dir, "keys", "id")}),
		"stat: "+filepath.Join(dir, "keys", "id")+": permission denied (refused by the sandbox's policy: denyRead keys ("+policyFile+"))")

	// Outside the binds: nothing there.
	assert.Equal(t, tool.StatOutput{Path: filepath.Join(outside, "secret"), Exists: false}, statOf(t, s, filepath.Join(outside, "secret")))
	requireToolFailure(t, s.call("list", map[string]any{"path": outside}), "no such file or directory")
}
