//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEscapeLargeWrites plays the attacker with writes of large files, sent
// as raw bytes. They are past the size from which the front and boxsh-init
// take their fast paths, and past the chunks a large file is written in.
// The writes go:
//   - with a second, case-varied or duplicate path member after the
//     content;
//   - through links to read-only and hidden files;
//   - into a read-only bind;
//   - at a hard-denied name and at a directory.
//
// Each is refused or stays in the sandbox as the small write would, and no
// host file changes. A refused replacement leaves the old file whole.
func TestEscapeLargeWrites(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	base := t.TempDir()
	ro, wr := filepath.Join(base, "ro"), filepath.Join(base, "wr")
	hidden := t.TempDir()
	secret := filepath.Join(hidden, "secret")
	writeHostFile(t, filepath.Join(ro, "f"), "ro\n", 0o644)
	writeHostFile(t, filepath.Join(wr, "old"), "old\n", 0o644)
	require.NoError(t, os.Mkdir(filepath.Join(wr, "dir"), 0o755))
	writeHostFile(t, secret, "s3cret\n", 0o600)
	require.NoError(t, os.Symlink(filepath.Join(ro, "f"), filepath.Join(wr, "ro-link")))
	require.NoError(t, os.Symlink(secret, filepath.Join(wr, "secret-link")))

	s := startServer(t, ctx, serverOptions{args: []string{"--sandbox", "--bind", "ro:" + ro, "--bind", "wr:" + wr}, dir: wr})
	body := strings.Repeat("big \"quoted\" \\ line é\n", (5<<20)/24)
	content, err := json.Marshal(body)
	require.NoError(t, err)
	q := func(s string) string {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		return string(b)
	}
	write := func(args string) message {
		t.Helper()
		id := s.newID()
		s.send([]byte(`{"jsonrpc":"2.0","id":` + q(id) + `,"method":"tools/call","params":{"name":"write","arguments":` + args + `}}`))
		return s.expect(q(id))
	}
	allowed := filepath.Join(wr, "new.txt")
	for _, tc := range []struct {
		args string
		want string
	}{
		// encoding/json keeps the last of keys equal regardless of case:
		// boxsh-init writes there, and checks it there.
		{`{"path":` + q(allowed) + `,"content":` + string(content) + `,"PATH":` + q(filepath.Join(ro, "f")) + `}`, "read-only file system"},
		{`{"path":` + q(allowed) + `,"content":` + string(content) + `,"path":` + q(filepath.Join(ro, "new")) + `}`, "read-only file system"},
		{`{"path":` + q(allowed) + `,"content":` + string(content) + `,"pAtH":` + q(filepath.Join(wr, "ro-link")) + `}`, "read-only file system"},
		{`{"Path":` + q(allowed) + `,"content":` + string(content) + `}`, "rpc:missing string field: path"},
		{`{"path":` + q(filepath.Join(ro, "sub", "new")) + `,"content":` + string(content) + `}`, "read-only file system"},
		{`{"path":` + q(filepath.Join(wr, ".mcp.json")) + `,"content":` + string(content) + `}`, "hard-denied .mcp.json"},
		{`{"path":` + q(filepath.Join(wr, "dir")) + `,"content":` + string(content) + `}`, "is a directory"},
		{`{"path":` + q(filepath.Join(wr, "old")) + `,"content":` + string(content) + `,"encoding":"base64"}`, "base64"},
	} {
		m := write(tc.args)
		if msg, ok := strings.CutPrefix(tc.want, "rpc:"); ok {
			assert.Contains(t, m.rpcErr(t).Message, msg)
			continue
		}
		requireToolFailure(t, m, tc.want)
	}
	requireHostFile(t, filepath.Join(wr, "old"), "old\n")
	requireHostAbsent(t, allowed)
	// The link to a hidden file: its target is not in the sandbox, so a
	// write there creates the sandbox's own copy at most.
	if r := write(`{"path":` + q(filepath.Join(wr, "secret-link")) + `,"content":` + string(content) + `}`).toolResult(t); !r.IsError {
		out := s.bash("wc -c < " + shq(secret))
		assert.Equal(t, strconv.Itoa(len(body)), strings.TrimSpace(out.Stdout), "the sandbox's own copy")
	}
	// A large write that succeeds writes exactly the content.
	r := write(`{"path":` + q(filepath.Join(wr, "old")) + `,"content":` + string(content) + `}`).toolResult(t)
	require.False(t, r.IsError, "%s", r.text())
	got, err := os.ReadFile(filepath.Join(wr, "old"))
	require.NoError(t, err)
	assert.True(t, string(got) == body, "the written file is the content (%d bytes, want %d)", len(got), len(body))
	s.stop()

	requireHostFile(t, filepath.Join(ro, "f"), "ro\n")
	requireHostFile(t, secret, "s3cret\n")
	requireHostAbsent(t, filepath.Join(ro, "new"))
	requireHostAbsent(t, filepath.Join(ro, "sub"))
	requireHostAbsent(t, filepath.Join(wr, ".mcp.json"))
	fi, err := os.Stat(filepath.Join(wr, "dir"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	entries, err := os.ReadDir(wr)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.Contains(e.Name(), ".boxsh-"), "no temporary file left: %s", e.Name())
	}
	for name, target := range map[string]string{"ro-link": filepath.Join(ro, "f"), "secret-link": secret} {
		got, err := os.Readlink(filepath.Join(wr, name))
		if assert.NoError(t, err, "%s must still be a link", name) {
			assert.Equal(t, target, got)
		}
	}
}
