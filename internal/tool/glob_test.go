package tool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// globTree makes files under a new directory, which it returns with its
// symlinks resolved, as the policy's rules name paths.
func globTree(t *testing.T, files ...string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, f := range files {
		p := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	return dir
}

// rules are a sandbox's read rules by path, for a test's Env.
type rules map[string]string

func (r rules) DeniedBy(path string) string { return r[path] }

// errBadArgs is the error of arguments that do not decode.
var errBadArgs = errors.New("invalid arguments")

// globMux is a Mux with the handlers defined with their tools, as
// boxsh-init's.
func globMux() *Mux[rules, Result] {
	m := NewMux[rules, Result](SandboxSet, Init, func(_ string, args json.RawMessage, v any) error {
		if json.Unmarshal(args, v) != nil {
			return errBadArgs
		}
		return nil
	})
	HandleDefined(m)
	return m
}

// callGlob calls the glob tool through its handler, as boxsh-init does.
func callGlob(t *testing.T, env rules, args string) (GlobOutput, Result) {
	t.Helper()
	h, ok := globMux().Lookup(Glob)
	require.True(t, ok, "glob has a handler")
	r, err := h(context.Background(), env, json.RawMessage(args))
	require.NoError(t, err)
	var out GlobOutput
	if !r.IsError {
		require.NoError(t, json.Unmarshal(r.StructuredContent.(json.RawMessage), &out))
	}
	return out, r
}

func globPaths(out GlobOutput) []string {
	var paths []string
	for _, m := range out.Matches {
		paths = append(paths, m.Path)
	}
	return paths
}

// TestGlob checks the patterns: * and ? within a segment, ** across any
// number of them, a class, and the lexical order of the answer.
func TestGlob(t *testing.T) {
	dir := globTree(t, "a.go", "b.txt", "cmd/main.go", "cmd/x/deep.go", "docs/a.md", "z/b.go")
	a := rules{}
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{"*.go", []string{"a.go"}},
		{"**/*.go", []string{"a.go", "cmd/main.go", "cmd/x/deep.go", "z/b.go"}},
		{"cmd/**", []string{"cmd", "cmd/main.go", "cmd/x", "cmd/x/deep.go"}},
		{"cmd/**/*.go", []string{"cmd/main.go", "cmd/x/deep.go"}},
		{"?.*", []string{"a.go", "b.txt"}},
		{"[ab].go", []string{"a.go"}},
		{"./docs/*.md", []string{"docs/a.md"}},
		{"nothing/*", nil},
	} {
		out, r := callGlob(t, a, `{"pattern":`+strconv.Quote(c.pattern)+`,"path":`+strconv.Quote(dir)+`}`)
		require.False(t, r.IsError, "%s: %+v", c.pattern, r.Content)
		assert.Equal(t, c.want, globPaths(out), c.pattern)
		assert.Equal(t, dir, out.Path)
		assert.False(t, out.Truncated, c.pattern)
		assert.NotNil(t, out.Matches, "matches is [] when nothing matches, never null")
	}
	out, _ := callGlob(t, a, `{"pattern":"cmd","path":`+strconv.Quote(dir)+`}`)
	assert.Equal(t, []GlobMatch{{Path: "cmd", Type: FileTypeDir}}, out.Matches)
}

// TestGlobLimit checks that a glob answers at most limit matches and says
// that it left some out.
func TestGlobLimit(t *testing.T) {
	dir := globTree(t, "1", "2", "3", "4")
	out, _ := callGlob(t, rules{}, `{"pattern":"*","limit":2,"path":`+strconv.Quote(dir)+`}`)
	assert.Equal(t, []string{"1", "2"}, globPaths(out))
	assert.True(t, out.Truncated)
	out, _ = callGlob(t, rules{}, `{"pattern":"*","limit":4,"path":`+strconv.Quote(dir)+`}`)
	assert.Len(t, out.Matches, 4)
	assert.False(t, out.Truncated, "exactly limit matches leave nothing out")
}

// TestGlobDoesNotFollowLinks checks that a glob matches a symbolic link as
// a link and never walks through it, loops included, and that it does not
// descend into a directory the policy refuses to read, which it marks.
func TestGlobDoesNotFollowLinks(t *testing.T) {
	dir := globTree(t, "real/file.go", "secret/key.go")
	outside := globTree(t, "outside.go")
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink(dir, filepath.Join(dir, "real", "loop")))
	secret := filepath.Join(dir, "secret")
	a := rules{secret: "denyRead secret (f)"}

	out, r := callGlob(t, a, `{"pattern":"**","path":`+strconv.Quote(dir)+`}`)
	require.False(t, r.IsError, "%+v", r.Content)
	assert.Equal(t, []GlobMatch{
		{Path: "link", Type: FileTypeSymlink},
		{Path: "real", Type: FileTypeDir},
		{Path: "real/file.go", Type: FileTypeFile},
		{Path: "real/loop", Type: FileTypeSymlink},
		{Path: "secret", Type: FileTypeDir, DeniedBy: "denyRead secret (f)"},
	}, out.Matches)
}

// TestGlobRefusesBadArguments checks the errors of patterns and paths that
// glob cannot use: each says what is wrong.
func TestGlobRefusesBadArguments(t *testing.T) {
	dir := globTree(t, "f")
	for args, want := range map[string]string{
		`{"pattern":"/etc/*"}`: "is absolute",
		`{"pattern":"../*"}`:   "has a .. segment",
		`{"pattern":"[a"}`:     "syntax error in pattern",
		`{"pattern":""}`:       "pattern is empty",
		`{"pattern":"./"}`:     "names no path",
		`{"pattern":"*","path":` + strconv.Quote(filepath.Join(dir, "f")) + `}`:    "not a directory",
		`{"pattern":"*","path":` + strconv.Quote(filepath.Join(dir, "none")) + `}`: "no such file or directory",
		`{"pattern":"*","limit":-1}`: "limit must be at least 0",
	} {
		_, r := callGlob(t, rules{}, args)
		require.True(t, r.IsError, args)
		assert.Contains(t, r.Content[0].Text, want, args)
	}
	h, _ := globMux().Lookup(Glob)
	_, err := h(context.Background(), rules{}, json.RawMessage(`{"pattern":3}`))
	assert.ErrorIs(t, err, errBadArgs, "arguments that do not decode: the Mux's error")
}
