package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRPCTryReviewable checks the README's agent configuration, boxsh --rpc
// --try in the project. It gives changes a person reviews and applies. The
// agent, the official SDK here, writes and edits through the tools, and the
// project is untouched. boxsh changes, diff and apply work on the session
// whose DST boxsh names.
func TestRPCTryReviewable(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	parent := t.TempDir()
	proj := filepath.Join(parent, "proj")
	require.NoError(t, os.Mkdir(proj, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proj, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))

	cmd := exec.CommandContext(ctx, boxshPath(), "--rpc", "--try")
	cmd.Dir = proj
	cmd.WaitDelay = 5 * time.Second
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	agent := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1.0.0"}, nil)
	s, err := agent.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, nil)
	require.NoError(t, err)
	// The agent works at the project's own path: that is where it
	// starts, and what tool results and diffs name.
	assert.Equal(t, proj+"\n", sh(t, ctx, s, "pwd"))
	sh(t, ctx, s, "echo notes > NOTES.md")
	res := sdkCall(t, ctx, s, "edit", map[string]any{"path": filepath.Join(proj, "main.go"), "edits": []map[string]any{{"oldText": "func main() {}", "newText": "func main() { println(1) }"}}})
	require.False(t, res.IsError, sdkText(t, res))
	assert.Contains(t, sdkText(t, res), "+++ b/"+strings.TrimPrefix(filepath.Join(proj, "main.go"), "/"), "the diff names the project's path")
	assert.Equal(t, "notes\n", sh(t, ctx, s, "cat "+filepath.Join(proj, "NOTES.md")), "the project's path shows the session's files")
	require.NoError(t, s.Close())

	assert.NoFileExists(t, filepath.Join(proj, "NOTES.md"), "the project is untouched until apply")
	m := regexp.MustCompile(`boxsh: changes will be saved in (\S+)`).FindStringSubmatch(stderr.String())
	require.NotNil(t, m, "boxsh names the session's DST: %s", stderr.String())
	dst := m[1]
	assert.Contains(t, stderr.String(), "boxsh: 2 file(s) changed in ", "at the end it says how many files changed")

	r := runBoxshIn(t, ctx, proj, "", nil, "sessions")
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, dst, "boxsh sessions lists it")
	r = runBoxshIn(t, ctx, proj, "", nil, "changes", dst)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "A NOTES.md (0644)\nM main.go\n", r.stdout)
	r = runBoxshIn(t, ctx, proj, "", nil, "diff", dst, "main.go")
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "+func main() { println(1) }")
	r = runBoxshIn(t, ctx, proj, "", nil, "apply", dst)
	require.Equal(t, 0, r.code(), r.stderr)
	b, err := os.ReadFile(filepath.Join(proj, "main.go"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(b), "println(1)"), string(b))
	assert.FileExists(t, filepath.Join(proj, "NOTES.md"))
	r = runBoxshIn(t, ctx, proj, "", nil, "discard", dst)
	require.Equal(t, 0, r.code(), r.stderr)

	// A cow: bind of one's own records no session, and boxsh changes says
	// what does.
	r = runBoxshIn(t, ctx, proj, "", nil, "changes", filepath.Join(parent, "elsewhere"))
	assert.Equal(t, 1, r.code())
	assert.Contains(t, r.stderr, "boxsh --rpc --try for an agent")
}
