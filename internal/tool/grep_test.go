package tool

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grepTree makes files with the given contents under a new directory,
// which it returns with its symlinks resolved.
func grepTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for name, text := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return dir
}

// callGrep calls the grep tool through its handler, as boxsh-init does.
func callGrep(t *testing.T, env rules, args any) (GrepOutput, Result) {
	t.Helper()
	h, ok := globMux().Lookup(Grep)
	require.True(t, ok, "grep has a handler")
	b, err := json.Marshal(args)
	require.NoError(t, err)
	r, err := h(context.Background(), env, b)
	require.NoError(t, err)
	var out GrepOutput
	if !r.IsError {
		require.NoError(t, json.Unmarshal(r.StructuredContent.(json.RawMessage), &out))
	}
	return out, r
}

// TestGrep checks the matching lines of a tree: by path in lexical order,
// then by line, with the glob filter and either case.
func TestGrep(t *testing.T) {
	dir := grepTree(t, map[string]string{
		"a.go":          "package a\n\nfunc Hello() {}\n",
		"b.txt":         "hello\r\nworld\nHELLO again",
		"cmd/main.go":   "package main\n// hello from main\n",
		"cmd/x/deep.go": "nothing here\n",
		"docs/a.md":     "# Hello\n",
		"empty":         "",
	})
	for _, c := range []struct {
		args GrepArgs
		want []GrepMatch
	}{
		{GrepArgs{Pattern: "hello"}, []GrepMatch{{"b.txt", 1, "hello"}, {"cmd/main.go", 2, "// hello from main"}}},
		{GrepArgs{Pattern: "hello", IgnoreCase: true}, []GrepMatch{
			{"a.go", 3, "func Hello() {}"}, {"b.txt", 1, "hello"}, {"b.txt", 3, "HELLO again"},
			{"cmd/main.go", 2, "// hello from main"}, {"docs/a.md", 1, "# Hello"}}},
		{GrepArgs{Pattern: "(?i)hello", Glob: "**/*.go"}, []GrepMatch{{"a.go", 3, "func Hello() {}"}, {"cmd/main.go", 2, "// hello from main"}}},
		{GrepArgs{Pattern: "^package", Glob: "*.go"}, []GrepMatch{{"a.go", 1, "package a"}}},
		{GrepArgs{Pattern: "^$"}, []GrepMatch{{"a.go", 2, ""}}},
		{GrepArgs{Pattern: "o", Path: filepath.Join(dir, "cmd"), Glob: "x/*"}, []GrepMatch{{"x/deep.go", 1, "nothing here"}}},
		{GrepArgs{Pattern: "absent"}, []GrepMatch{}},
	} {
		c.args.Path = cmp.Or(c.args.Path, dir)
		out, r := callGrep(t, rules{}, c.args)
		require.False(t, r.IsError, "%+v: %v", c.args, r)
		assert.Equal(t, c.want, out.Matches, "%+v", c.args)
		assert.False(t, out.Truncated, "%+v", c.args)
		assert.Equal(t, c.args.Path, out.Path)
	}
	out, _ := callGrep(t, rules{}, GrepArgs{Pattern: "x", Path: dir})
	assert.Equal(t, 6, out.Files, "every file is searched, the empty one too")
	assert.Zero(t, out.Skipped)

	// A file as path: its matches, named by its base name.
	out, r := callGrep(t, rules{}, GrepArgs{Pattern: "world", Path: filepath.Join(dir, "b.txt")})
	require.False(t, r.IsError, "%v", r)
	assert.Equal(t, []GrepMatch{{"b.txt", 2, "world"}}, out.Matches)
	assert.Equal(t, 1, out.Files)

	// The working directory by default, relative paths from it.
	t.Chdir(filepath.Join(dir, "cmd"))
	out, _ = callGrep(t, rules{}, GrepArgs{Pattern: "hello"})
	assert.Equal(t, []GrepMatch{{"main.go", 2, "// hello from main"}}, out.Matches)
	assert.Equal(t, filepath.Join(dir, "cmd"), out.Path)
}

// TestGrepLimit checks the bound on matches: truncated tells that more
// were left out, and the limit is capped.
func TestGrepLimit(t *testing.T) {
	dir := grepTree(t, map[string]string{
		"a": strings.Repeat("match\n", 10),
		"b": strings.Repeat("match\n", 10),
	})
	out, _ := callGrep(t, rules{}, GrepArgs{Pattern: "match", Path: dir, Limit: 15})
	require.Len(t, out.Matches, 15)
	assert.True(t, out.Truncated)
	assert.Equal(t, GrepMatch{"b", 5, "match"}, out.Matches[14])

	out, _ = callGrep(t, rules{}, GrepArgs{Pattern: "match", Path: dir, Limit: 20})
	assert.Len(t, out.Matches, 20)
	assert.False(t, out.Truncated, "exactly the limit")

	big := grepTree(t, map[string]string{"many": strings.Repeat("x\n", MaxGrepLimit+DefaultGrepLimit)})
	out, _ = callGrep(t, rules{}, GrepArgs{Pattern: "x", Path: big})
	assert.Len(t, out.Matches, DefaultGrepLimit, "the default limit")
	out, _ = callGrep(t, rules{}, GrepArgs{Pattern: "x", Path: big, Limit: 1 << 30})
	assert.Len(t, out.Matches, MaxGrepLimit, "the limit is capped")
	assert.True(t, out.Truncated)
}

// TestGrepSkips checks what is not searched: binary and special files,
// a file with a line over the bound; links are not followed; a long line
// is cut on a rune boundary.
func TestGrepSkips(t *testing.T) {
	outside := grepTree(t, map[string]string{"secret": "needle outside\n"})
	dir := grepTree(t, map[string]string{
		"binary": "needle\x00\x01\x02",
		"huge":   "needle\n" + strings.Repeat("y", MaxGrepLine+1) + "\n",
		"long":   strings.Repeat("é", MaxGrepText) + " needle\n",
		"plain":  "a needle\n",
	})
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "linkdir")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))

	out, r := callGrep(t, rules{}, GrepArgs{Pattern: "needle", Path: dir})
	require.False(t, r.IsError, "%v", r)
	require.Len(t, out.Matches, 2, "%+v", out.Matches)
	assert.Equal(t, "long", out.Matches[0].Path)
	assert.LessOrEqual(t, len(out.Matches[0].Text), MaxGrepText)
	assert.Equal(t, strings.Repeat("é", MaxGrepText/2), out.Matches[0].Text, "cut between runes")
	assert.Equal(t, GrepMatch{"plain", 1, "a needle"}, out.Matches[1])
	assert.Equal(t, 3, out.Skipped, "binary, huge and the FIFO")
	assert.Equal(t, 2, out.Files)

	// A FIFO as path does not hold the call.
	out, r = callGrep(t, rules{}, GrepArgs{Pattern: "needle", Path: filepath.Join(dir, "fifo")})
	require.False(t, r.IsError, "%v", r)
	assert.Equal(t, 1, out.Skipped)
	assert.Empty(t, out.Matches)
}

// TestGrepDenied checks that a file or directory the policy refuses is
// listed with its rule and never read, and that a denied file as path
// is refused.
func TestGrepDenied(t *testing.T) {
	dir := grepTree(t, map[string]string{
		"keys/id":    "needle\n",
		"notes.txt":  "needle\n",
		"secret.env": "needle\n",
	})
	env := rules{filepath.Join(dir, "keys"): "deny_read ~/keys", filepath.Join(dir, "secret.env"): "deny_read *.env"}
	out, r := callGrep(t, env, GrepArgs{Pattern: "needle", Path: dir})
	require.False(t, r.IsError, "%v", r)
	assert.Equal(t, []GrepMatch{{"notes.txt", 1, "needle"}}, out.Matches)
	assert.Equal(t, []GrepDenied{{"keys", "deny_read ~/keys"}, {"secret.env", "deny_read *.env"}}, out.Denied)
	assert.Equal(t, 1, out.Files)

	_, r = callGrep(t, env, GrepArgs{Pattern: "needle", Path: filepath.Join(dir, "secret.env")})
	require.True(t, r.IsError)
	assert.Contains(t, r.Content[0].Text, "denied by the sandbox policy (deny_read *.env)")
}

// TestGrepBadArgs checks the errors of arguments grep cannot use.
func TestGrepBadArgs(t *testing.T) {
	dir := grepTree(t, map[string]string{"a": "a\n"})
	for args, want := range map[string]string{
		`{"pattern":""}`:                           "grep: pattern is empty",
		`{"pattern":"a(","path":"` + dir + `"}`:    "grep: pattern a(: missing closing ): `a(`",
		`{"pattern":"a","path":"` + dir + `/no"}`:  "grep: " + dir + "/no: no such file or directory",
		`{"pattern":"a","glob":"/abs"}`:            "grep: glob: pattern /abs is absolute: give the directory as path and the pattern relative to it",
		`{"pattern":"a","glob":"../x"}`:            "grep: glob: pattern ../x has a .. segment: give the directory as path",
		`{"pattern":"a","limit":-1}`:               "grep: limit must be at least 0 (got -1)",
		`{"pattern":"\\1","path":"` + dir + `"}`:   "grep: pattern \\1: invalid escape sequence: `\\1`",
		`{"pattern":"a","path":"` + dir + `/a/b"}`: "grep: " + dir + "/a/b: not a directory",
	} {
		h, _ := globMux().Lookup(Grep)
		r, err := h(context.Background(), rules{}, json.RawMessage(args))
		require.NoError(t, err)
		require.True(t, r.IsError, args)
		assert.Equal(t, want, r.Content[0].Text, args)
	}
}
