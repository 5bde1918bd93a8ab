package toolhost

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/tool"
)

func TestEncodeBashFitsTheLimit(t *testing.T) {
	out := tool.BashOutput{Stdout: strings.Repeat("\x00", 100_000), Stderr: "é" + strings.Repeat("\x01", 20_000)}
	b := encodeBash(out, 200_000)
	require.LessOrEqual(t, len(b), 200_000)
	var r struct {
		StructuredContent tool.BashOutput
	}
	require.NoError(t, json.Unmarshal(b, &r))
	assert.True(t, r.StructuredContent.StdoutTruncated)
	assert.NotEmpty(t, r.StructuredContent.Stdout)
	assert.Less(t, len(r.StructuredContent.Stdout), 100_000)

	small := encodeBash(tool.BashOutput{Stdout: "x"}, 200_000)
	assert.NotContains(t, string(small), "truncated")
}

func TestCutUTF8(t *testing.T) {
	assert.Equal(t, "a", cutUTF8("aé", 2), "never splits a character")
	assert.Equal(t, "aé", cutUTF8("aé", 3))
	assert.Equal(t, "", cutUTF8("é", 1))
}

func TestCheckArgv(t *testing.T) {
	assert.NoError(t, checkArgv(tool.BashArgs{Args: []string{"ls", "-l"}}))
	for args, want := range map[*tool.BashArgs]string{
		{Args: []string{}}:      "bash tool: args must name a program",
		{Args: []string{"-rf"}}: `bash tool: args[0] must name a program, got "-rf", which begins with -`,
	} {
		err := checkArgv(*args)
		var fe *initproto.Error
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, -32602, fe.Code)
		assert.Equal(t, want, fe.Message)
	}
}

// counting is an Activity that counts the calls running and begun.
type counting struct{ running, begun atomic.Int32 }

func (c *counting) Begin() { c.running.Add(1); c.begun.Add(1) }
func (c *counting) End()   { c.running.Add(-1) }

// TestActivityHearsEveryCall checks that the Activity hears of every call,
// quick reads, other file calls and bash calls alike. It hears of a call's
// end once the call is answered.
func TestActivityHearsEveryCall(t *testing.T) {
	var c counting
	r, w := serveHostOnPipe(t, func(a *Host) { a.cfg.Activity = &c })
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	require.NoError(t, os.WriteFile(small, []byte("hello\n"), 0o644))
	calls := []initproto.Call{
		{ID: 1, Tool: "read", Args: json.RawMessage(`{"path":` + strconv.Quote(small) + `}`)},
		{ID: 2, Tool: "bash", Args: json.RawMessage(`{"command":"echo hi"}`)},
		{ID: 3, Tool: "write", Args: json.RawMessage(`{"path":` + strconv.Quote(filepath.Join(dir, "w")) + `,"content":"x"}`)},
	}
	for _, call := range calls {
		require.NoError(t, w.WriteJSON(call))
		reply := nextReply(t, r)
		assert.Equal(t, call.ID, reply.ID)
	}
	require.Eventually(t, func() bool { return c.running.Load() == 0 }, 5*time.Second, time.Millisecond,
		"every call that began ended")
	assert.Equal(t, int32(3), c.begun.Load())
}

// TestEveryToolHasAHandler checks that every tool boxsh-init runs has its
// handler (Handle refuses a second one, and one of the front's tools).
func TestEveryToolHasAHandler(t *testing.T) {
	assert.Empty(t, tools.Missing(), "tools of boxsh-init without a handler")
	assert.Equal(t, tool.Names(tool.SandboxSet, tool.On(tool.Init)), tools.Names())
}

// TestDefinedHandlersSeeTheRules checks that a handler defined with its
// tool (glob's) is given the sandbox's read rules by the Host.
func TestDefinedHandlersSeeTheRules(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.Mkdir(secret, 0o755))
	a := &Host{cfg: Config{Rules: []initproto.PolicyRule{{Path: secret, Rule: "denyRead secret (f)"}}}}
	r, err := a.run(context.Background(), tool.Glob, json.RawMessage(`{"pattern":"*","path":`+strconv.Quote(dir)+`}`))
	require.NoError(t, err)
	var out tool.GlobOutput
	require.NoError(t, json.Unmarshal(r.StructuredContent.(json.RawMessage), &out))
	assert.Equal(t, []tool.GlobMatch{{Path: "secret", Type: tool.FileTypeDir, DeniedBy: "denyRead secret (f)"}}, out.Matches)
}
