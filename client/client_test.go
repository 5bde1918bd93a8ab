package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestExecReadWriteEdit(t *testing.T) {
	c, dir := startPlain(t, Options{Workers: 2})
	ctx := testCtx(t)

	r, err := c.Run(ctx, "echo hello; echo oops >&2; exit 3")
	require.NoError(t, err, "a non-zero exit is a result")
	require.Equal(t, 3, r.ExitCode)
	require.Equal(t, "hello\n", r.Stdout)
	require.Equal(t, "oops\n", r.Stderr)

	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	r, err = c.Exec(ctx, ExecRequest{Command: `pwd; echo "$GREETING"; cat`, Cwd: sub, Env: map[string]string{"GREETING": "hi"}, Stdin: "in\n"})
	require.NoError(t, err)
	require.Equal(t, sub+"\nhi\nin\n", r.Stdout)

	r, err = c.Exec(ctx, ExecRequest{Command: "sleep 5", Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, -1, r.ExitCode)

	_, err = c.Exec(ctx, ExecRequest{Command: "true", Cwd: filepath.Join(dir, "missing")})
	var te *ToolError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "bash", te.Tool)

	p := filepath.Join(dir, "f.txt")
	require.NoError(t, c.WriteString(ctx, p, "one\ntwo\n"))
	rr, err := c.Read(ctx, ReadRequest{Path: p})
	require.NoError(t, err)
	require.Equal(t, "text", rr.Encoding)
	require.Contains(t, rr.Content, "two")
	e, err := c.Edit(ctx, p, Edit{OldText: "two", NewText: "three"})
	require.NoError(t, err)
	require.Equal(t, 2, e.FirstChangedLine)
	require.Contains(t, e.Diff, "+three")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "one\nthree\n", string(b))

	_, err = c.Edit(ctx, p, Edit{OldText: "absent", NewText: "x"})
	require.ErrorAs(t, err, &te)
	require.Equal(t, "edit", te.Tool)

	bin := []byte{0, 1, 2, 255, '\n'}
	require.NoError(t, c.Write(ctx, filepath.Join(dir, "bin"), bin))
	got, err := os.ReadFile(filepath.Join(dir, "bin"))
	require.NoError(t, err)
	require.Equal(t, bin, got)

	_, err = c.Read(ctx, ReadRequest{Path: filepath.Join(dir, "nope")})
	require.ErrorAs(t, err, &te)

	var lines strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "long"), []byte(lines.String()), 0o644))
	all, err := c.ReadFile(ctx, filepath.Join(dir, "long"))
	require.NoError(t, err)
	require.Equal(t, lines.String(), all)
}

func TestTerminals(t *testing.T) {
	c, _ := startPlain(t, Options{})
	ctx := testCtx(t)
	term, err := c.RunInTerminal(ctx, "/bin/sh", 80, 24)
	require.NoError(t, err)
	require.NotEmpty(t, term.ID)
	_, err = c.SendToTerminal(ctx, term.ID, "echo from-pty\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		o, err := c.TerminalOutput(ctx, term.ID)
		return err == nil && strings.Contains(o.Output, "from-pty\n")
	}, 10*time.Second, 50*time.Millisecond)
	list, err := c.ListTerminals(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	_, err = c.KillTerminal(ctx, term.ID)
	require.NoError(t, err)
	_, err = c.SendToTerminal(ctx, "no-such-id", "x")
	var te *ToolError
	require.ErrorAs(t, err, &te)
}

func TestConcurrentCalls(t *testing.T) {
	c, _ := startPlain(t, Options{Workers: 4})
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Run(ctx, "echo "+strconv.Itoa(i))
			if err == nil && r.Stdout != strconv.Itoa(i)+"\n" {
				err = fmt.Errorf("call %d got %q", i, r.Stdout)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestProtocolError(t *testing.T) {
	c, _ := startPlain(t, Options{})
	_, err := c.CallTool(testCtx(t), "no_such_tool", map[string]any{})
	var pe *ProtocolError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, -32602, pe.Code)
	require.NoError(t, c.Ping(testCtx(t)))
}

// Cancelling the context returns at once and kills the command.
func TestCancel(t *testing.T) {
	c, dir := startPlain(t, Options{})
	pidFile := filepath.Join(dir, "pid")
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, ExecRequest{Command: "echo $$ > pid; exec sleep 60"})
		errc <- err
	}()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, 10*time.Second, 10*time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, time.Since(start), time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("Exec did not return on cancel")
	}
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 10*time.Second, 20*time.Millisecond, "the command is killed")
	require.NoError(t, c.Ping(testCtx(t)), "the server still serves")
}

// A server killed by SIGKILL fails the calls in flight with
// ServerGoneError; a new one starts, and the dead one is reaped.
func TestServerGone(t *testing.T) {
	c, dir := startPlain(t, Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Run(testCtx(t), "echo started > started; exec sleep 60")
		errc <- err
	}()
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the call runs")
	pid := c.Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	select {
	case err := <-errc:
		var gone *ServerGoneError
		require.ErrorAs(t, err, &gone)
		require.ErrorIs(t, err, ErrServerGone)
		require.Contains(t, gone.Error(), "killed")
	case <-time.After(10 * time.Second):
		t.Fatal("the pending call did not return")
	}
	require.False(t, c.Alive())
	_, err := c.Run(testCtx(t), "true")
	var gone *ServerGoneError
	require.ErrorAs(t, err, &gone)
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.True(t, err != nil || !strings.Contains(string(stat), ") Z "), "no zombie: %s", stat)

	c2, _ := startPlain(t, Options{Dir: dir})
	r, err := c2.Run(testCtx(t), "echo again")
	require.NoError(t, err)
	require.Equal(t, "again\n", r.Stdout)
}

func TestStartFailureShowsStderr(t *testing.T) {
	_, err := Start(testCtx(t), Options{Binary: boxshBin(), Args: []string{"stray"}})
	var se *StartError
	require.ErrorAs(t, err, &se)
	require.Contains(t, se.Stderr, "unexpected argument")
	require.Contains(t, se.Message, "unexpected argument")
	require.Equal(t, 2, se.ExitCode)
	require.False(t, errors.Is(err, ErrServerGone), "a configuration error is not a crash")
	_, err = Start(testCtx(t), Options{Binary: filepath.Join(t.TempDir(), "none")})
	require.ErrorAs(t, err, &se)
}

func TestCloseThenCall(t *testing.T) {
	c, _ := startPlain(t, Options{})
	require.NoError(t, c.Close())
	require.False(t, c.Alive())
	_, err := c.Run(testCtx(t), "true")
	require.True(t, errors.Is(err, ErrClosed), "%v", err)
}

func TestLastLines(t *testing.T) {
	require.Equal(t, "b\nc", lastLines("a\nb\nc\n", 2))
	require.Equal(t, "a\nb", lastLines("a\nb", 5))
	require.Equal(t, "", lastLines("", 3))
}

func TestTail(t *testing.T) {
	tl := &tail{max: 4}
	tl.Write([]byte("abc"))
	tl.Write([]byte("def"))
	require.Equal(t, "cdef", tl.String())
}

func TestListStatArgs(t *testing.T) {
	c, dir := startPlain(t, Options{})
	ctx := testCtx(t)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "d", "e"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d", "f"), []byte("12345"), 0o640))
	require.NoError(t, os.Symlink("f", filepath.Join(dir, "d", "l")))

	l, err := c.List(ctx, ListRequest{Path: filepath.Join(dir, "d")})
	require.NoError(t, err)
	var names []string
	for _, e := range l.Entries {
		names = append(names, e.Name+":"+e.Type)
	}
	require.Equal(t, []string{"e:dir", "f:file", "l:symlink"}, names)
	require.False(t, l.Truncated)

	st, err := c.Stat(ctx, filepath.Join(dir, "d", "f"))
	require.NoError(t, err)
	require.True(t, st.Exists)
	require.Equal(t, int64(5), *st.Size)
	require.Equal(t, "0640", st.Mode)
	st, err = c.Stat(ctx, filepath.Join(dir, "d", "l"))
	require.NoError(t, err)
	require.Equal(t, "f", st.Target)
	st, err = c.Stat(ctx, filepath.Join(dir, "none"))
	require.NoError(t, err)
	require.False(t, st.Exists)

	r, err := c.Exec(ctx, ExecRequest{Args: []string{"printf", "%s|", "a b", "$HOME", "*"}})
	require.NoError(t, err)
	require.Equal(t, "a b|$HOME|*|", r.Stdout, "no shell expansion")
	_, err = c.Exec(ctx, ExecRequest{Command: "x", Args: []string{"y"}})
	require.Error(t, err)
}

func TestSplitResult(t *testing.T) {
	id, res, ok := splitResult([]byte(`{"jsonrpc":"2.0","id":42,"result":{"a":1}}` + "\n"))
	require.True(t, ok)
	require.Equal(t, int64(42), id)
	require.Equal(t, `{"a":1}`, string(res))
	for _, l := range []string{`{"jsonrpc":"2.0","id":"x","result":{}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, `{"jsonrpc":"2.0","id":,"result":{}}`} {
		_, _, ok := splitResult([]byte(l))
		require.False(t, ok, l)
	}
}
