package session

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quoteCases are names and how git prints them with core.quotePath=true
// (checked with git 2.x; TestQuotePathGit asks the git at hand too).
var quoteCases = []struct{ name, want string }{
	{"plain.txt", "plain.txt"},
	{"with space.txt", "with space.txt"},
	{"dir/sub/f.go", "dir/sub/f.go"},
	{"~!@#$%^&*()_+{}|:<>?`-=[];',", "~!@#$%^&*()_+{}|:<>?`-=[];',"},
	{"x\033[2K\rA harmless.txt", `"x\033[2K\rA harmless.txt"`},
	{"y\nA innocent.txt", `"y\nA innocent.txt"`},
	{"tab\there", `"tab\there"`},
	{"bell\a bs\b vt\v ff\f", `"bell\a bs\b vt\v ff\f"`},
	{"nul-ish\x01\x1f", `"nul-ish\001\037"`},
	{"del\x7f", `"del\177"`},
	{`back\slash`, `"back\\slash"`},
	{`dq"uote`, `"dq\"uote"`},
	{"café", `"caf\303\251"`},
	{"bad\xff\xfe", `"bad\377\376"`},
	{"\u202ertl", `"\342\200\256rtl"`},
}

func TestQuotePath(t *testing.T) {
	for _, c := range quoteCases {
		assert.Equal(t, c.want, QuotePath(c.name), "%q", c.name)
		q := QuotePath(c.name)
		for i := 0; i < len(q); i++ {
			require.True(t, q[i] >= 0x20 && q[i] < 0x7f, "%q: byte %#x left raw", c.name, q[i])
		}
	}
}

// TestQuotePathGit compares QuotePath with what git prints for the same
// names, as files of a repository.
func TestQuotePathGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git here")
	}
	dir := t.TempDir()
	cmd := exec.Command(git, "init", "-q", dir)
	require.NoError(t, cmd.Run())
	var names []string
	for _, c := range quoteCases {
		if strings.Contains(c.name, "/") {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(c.name)), 0o755))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, c.name), nil, 0o644))
		names = append(names, c.name)
	}
	cmd = exec.Command(git, "-c", "core.quotePath=true", "ls-files", "--others")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err)
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		got[l] = true
	}
	for _, n := range names {
		assert.True(t, got[QuotePath(n)], "git does not print %q as %s; it printed:\n%s", n, QuotePath(n), out)
	}
	assert.Len(t, got, len(names))
}

func TestEscapeControls(t *testing.T) {
	assert.Equal(t, "open x: no", EscapeControls("open x: no"))
	assert.Equal(t, `open x\033[2K\rA: no`, EscapeControls("open x\033[2K\rA: no"))
	assert.Equal(t, `a\nb café \ "`, EscapeControls("a\nb café \\ \""))
	for _, c := range quoteCases {
		q := QuotePath(c.name)
		assert.Equal(t, q, EscapeControls(q), "QuotePath's output passes unchanged")
	}
}

// Change.String quotes the path and a link's target; --json keeps the
// exact names (invalid UTF-8 bytes come out as U+FFFD, as encoding/json
// writes them).
func TestChangeStringQuotes(t *testing.T) {
	for _, c := range []struct {
		c    Change
		want string
	}{
		{Change{Path: "x\033[2K\rA harmless.txt", Kind: Added, Type: TypeFile, Mode: 0o644}, `A "x\033[2K\rA harmless.txt" (0644)`},
		{Change{Path: "y\nA innocent.txt", Kind: Modified, Type: TypeFile, Mode: 0o644, OldMode: 0o644}, `M "y\nA innocent.txt"`},
		{Change{Path: "d\tir", Kind: Deleted, Type: TypeDir, OldType: TypeDir}, `D "d\tir/"`},
		{Change{Path: "l", Kind: SymlinkChanged, Type: TypeSymlink, Target: "t\nD all", OldTarget: "u"}, `L l -> "t\nD all"`},
	} {
		assert.Equal(t, c.want, c.c.String(), "%#v", c.c)
	}
	b, err := json.Marshal(Change{Path: "x\033[2K\rA\nb\xff", Kind: Added, Type: TypeFile})
	require.NoError(t, err)
	assert.True(t, json.Valid(b))
	assert.False(t, bytes.ContainsAny(b, "\033\r\n"))
	var back Change
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, "x\033[2K\rA\nb\uFFFD", back.Path)
}
