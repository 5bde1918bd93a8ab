package terminal

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const bash = "/usr/bin/bash"

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// newManager returns a Manager that is closed when the test ends.
func newManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	if opts.Log == nil {
		opts.Log = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Debug, Output: testWriter{t}})
	}
	m := NewManager(opts)
	t.Cleanup(m.Close)
	return m
}

// testWriter sends log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testContext returns a context that ends with the test or after a generous
// bound.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pollUntil calls Output until done accepts a snapshot (or the test context
// ends, failing the test) and returns that snapshot.
func pollUntil(t *testing.T, m *Manager, id string, done func(Snapshot) bool) Snapshot {
	t.Helper()
	ctx := testContext(t)
	var last Snapshot
	for ctx.Err() == nil {
		snap, err := m.Output(ctx, id)
		if ctx.Err() != nil {
			break
		}
		require.NoError(t, err)
		if done(snap) {
			return snap
		}
		last = snap
	}
	require.FailNow(t, "condition not reached", "last snapshot: %+v", last)
	return Snapshot{}
}

// runToExit runs command and returns its final snapshot, with its ID.
func runToExit(t *testing.T, m *Manager, command string, cols, rows int) Snapshot {
	t.Helper()
	snap, err := m.Run(testContext(t), command, cols, rows)
	require.NoError(t, err)
	require.Regexp(t, uuidV4, snap.ID)
	if !snap.Exited {
		id := snap.ID
		snap = pollUntil(t, m, id, exited)
		snap.ID = id
	}
	return snap
}

func exited(s Snapshot) bool { return s.Exited }

func contains(text string) func(Snapshot) bool {
	return func(s Snapshot) bool { return strings.Contains(s.Output, text) }
}

// assertClean checks that a snapshot's text carries no escape sequence or
// carriage return.
func assertClean(t *testing.T, out string) {
	t.Helper()
	assert.NotContains(t, out, "\x1b", "escape in %q", out)
	assert.NotContains(t, out, "\r", "carriage return in %q", out)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestRunReturnsUUID(t *testing.T) {
	m := newManager(t, Options{})
	snap, err := m.Run(testContext(t), "sleep 100", 0, 0)
	require.NoError(t, err)
	assert.Regexp(t, uuidV4, snap.ID)
	u, err := uuid.Parse(snap.ID)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(4), u.Version())
	assert.False(t, snap.Exited)
	assert.Nil(t, snap.ExitCode)

	other, err := m.Run(testContext(t), "sleep 100", 0, 0)
	require.NoError(t, err)
	assert.NotEqual(t, snap.ID, other.ID)
}

// TestRunWaitsForOutput checks that Run's own snapshot carries the first
// output of the command, which the tools rely on.
func TestRunWaitsForOutput(t *testing.T) {
	m := newManager(t, Options{})
	snap, err := m.Run(testContext(t), "printf 'READY\\n'; exec sleep 100", 0, 0)
	require.NoError(t, err)
	assert.Equal(t, "READY", snap.Output)
	assert.False(t, snap.Exited)
}

func TestRendering(t *testing.T) {
	tests := []struct {
		name    string
		command string
		check   func(t *testing.T, out string)
	}{
		{"sgr colour", `printf '\033[31mRED\033[0m NORMAL'`, func(t *testing.T, out string) {
			assert.Contains(t, out, "RED NORMAL")
		}},
		{"bold and underline", `printf '\033[1mBOLD\033[22m \033[4mUNDER\033[24m'`, func(t *testing.T, out string) {
			assert.Contains(t, out, "BOLD UNDER")
		}},
		{"256 colour and truecolour", `printf '\033[38;5;196mFG256\033[0m \033[48;2;0;128;255mTRUE\033[0m'`, func(t *testing.T, out string) {
			assert.Contains(t, out, "FG256 TRUE")
		}},
		{"cursor back", `printf 'ABCDE\033[3Dxyz'`, func(t *testing.T, out string) {
			assert.Contains(t, out, "ABxyz")
			assert.NotContains(t, out, "CDE")
		}},
		{"carriage return", `printf 'hello\rworld'`, func(t *testing.T, out string) {
			assert.Contains(t, out, "world")
			assert.NotContains(t, out, "hello")
		}},
		{"backspace", `printf 'abc\b\bXY'`, func(t *testing.T, out string) {
			assert.Contains(t, out, "aXY")
		}},
		{"tab", `printf 'A\tB'`, func(t *testing.T, out string) {
			line := firstLine(out)
			a, b := strings.Index(line, "A"), strings.Index(line, "B")
			require.True(t, a >= 0 && b >= 0, "A and B in %q", line)
			assert.Equal(t, 8, b-a, "tab gap in %q", line)
		}},
		{"erase to end of line", `printf 'XXXX\rAB\033[K'`, func(t *testing.T, out string) {
			line := firstLine(out)
			assert.Contains(t, line, "AB")
			assert.NotContains(t, line, "XX")
		}},
		{"clear screen", `printf 'OLD\n\033[2J\033[HNEW'`, func(t *testing.T, out string) {
			assert.Contains(t, out, "NEW")
			assert.NotContains(t, out, "OLD")
		}},
		{"cursor forward", `printf 'AB\033[3CCD'`, func(t *testing.T, out string) {
			line := firstLine(out)
			ab, cd := strings.Index(line, "AB"), strings.Index(line, "CD")
			require.True(t, ab >= 0 && cd >= 0, "AB and CD in %q", line)
			assert.Equal(t, 5, cd-ab, "gap in %q", line)
		}},
		{"multi-line colours", `printf '\033[32mL1\033[0m\n\033[33mL2\033[0m\n\033[34mL3\033[0m'`, func(t *testing.T, out string) {
			assert.Equal(t, "L1\nL2\nL3", out)
		}},
		{"cursor position and erase display", `printf 'aaa\nbbb\nccc\033[2;2H\033[J'`, func(t *testing.T, out string) {
			assert.Equal(t, "aaa\nb", out)
		}},
		{"title and utf-8", `printf '\033]0;title\007héllo 日本'`, func(t *testing.T, out string) {
			assert.Equal(t, "héllo 日本", out)
		}},
		{"alternate screen left", `printf 'main\n\033[?1049hFULLSCREEN\033[?1049lback'`, func(t *testing.T, out string) {
			assert.Equal(t, "main\nback", out)
		}},
		{"insert and delete", `printf 'abcdef\033[3G\033[2@XY\033[2P'`, func(t *testing.T, out string) {
			assert.Equal(t, "abXYef", out)
		}},
	}
	m := newManager(t, Options{MaxSessions: len(tests) + 1})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := runToExit(t, m, tt.command, 0, 0)
			assert.Equal(t, 0, *snap.ExitCode)
			assertClean(t, snap.Output)
			tt.check(t, snap.Output)
		})
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		command string
		want    int
	}{
		{"true", 0},
		{"exit 3", 3},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL)},
	}
	m := newManager(t, Options{})
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			snap := runToExit(t, m, tt.command, 0, 0)
			require.NotNil(t, snap.ExitCode)
			assert.Equal(t, tt.want, *snap.ExitCode)

			// The snapshot stays available.
			again, err := m.Output(testContext(t), snap.ID)
			require.NoError(t, err)
			assert.True(t, again.Exited)
			require.NotNil(t, again.ExitCode)
			assert.Equal(t, tt.want, *again.ExitCode)
		})
	}
}

func TestSnapshotJSON(t *testing.T) {
	m := newManager(t, Options{})
	running, err := m.Run(testContext(t), "sleep 100", 0, 0)
	require.NoError(t, err)
	b, err := json.Marshal(running)
	require.NoError(t, err)
	assert.JSONEq(t, fmt.Sprintf(`{"id":%q,"output":"","exited":false,"exit_code":null}`, running.ID), string(b))

	snap := runToExit(t, m, "exit 3", 0, 0)
	snap.ID = ""
	b, err = json.Marshal(snap)
	require.NoError(t, err)
	assert.JSONEq(t, `{"output":"","exited":true,"exit_code":3}`, string(b))
}

func TestInteractive(t *testing.T) {
	m := newManager(t, Options{})
	ctx := testContext(t)
	run, err := m.Run(ctx, bash+" --norc --noprofile", 0, 0)
	require.NoError(t, err)

	_, err = m.Send(ctx, run.ID, "echo hi_$((40+2))\n")
	require.NoError(t, err)
	snap := pollUntil(t, m, run.ID, contains("hi_42"))
	assert.False(t, snap.Exited)
	assert.Nil(t, snap.ExitCode)
	assertClean(t, snap.Output)

	_, err = m.Send(ctx, run.ID, "printf '\\033[35mPURPLE\\033[0m OK\\n'\n")
	require.NoError(t, err)
	pollUntil(t, m, run.ID, contains("PURPLE OK"))

	// The shell keeps its state between sends.
	_, err = m.Send(ctx, run.ID, "X=kept\n")
	require.NoError(t, err)
	_, err = m.Send(ctx, run.ID, "echo value_$X\n")
	require.NoError(t, err)
	pollUntil(t, m, run.ID, contains("value_kept"))

	_, err = m.Send(ctx, run.ID, "exit 5\n")
	require.NoError(t, err)
	snap = pollUntil(t, m, run.ID, exited)
	require.NotNil(t, snap.ExitCode)
	assert.Equal(t, 5, *snap.ExitCode)
}

func TestShellSession(t *testing.T) {
	m := newManager(t, Options{})
	ctx := testContext(t)
	run, err := m.Run(ctx, "/bin/sh", 0, 0)
	require.NoError(t, err)
	_, err = m.Send(ctx, run.ID, "echo sh_$((6*7))\n")
	require.NoError(t, err)
	pollUntil(t, m, run.ID, contains("sh_42"))
}

func TestKill(t *testing.T) {
	m := newManager(t, Options{})
	ctx := testContext(t)
	run, err := m.Run(ctx, bash+" --norc --noprofile", 0, 0)
	require.NoError(t, err)
	pid := m.pid(run.ID)
	require.NotZero(t, pid)

	_, err = m.Send(ctx, run.ID, "printf '\\033[35mPURPLE\\033[0m OK\\n'\n")
	require.NoError(t, err)
	pollUntil(t, m, run.ID, contains("PURPLE OK"))

	snap, err := m.Kill(ctx, run.ID)
	require.NoError(t, err)
	assert.Empty(t, snap.ID)
	assert.Contains(t, snap.Output, "PURPLE OK")
	assertClean(t, snap.Output)
	assert.True(t, snap.Exited)

	assert.Empty(t, m.List())
	assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "process still exists")

	_, err = m.Kill(ctx, run.ID)
	assert.ErrorIs(t, err, ErrUnknownSession)
	_, err = m.Output(ctx, run.ID)
	assert.ErrorIs(t, err, ErrUnknownSession)
}

// TestKillEscalates kills a process that ignores SIGHUP; a done context cuts
// the grace period short.
func TestKillEscalates(t *testing.T) {
	m := newManager(t, Options{})
	run, err := m.Run(testContext(t), "trap '' HUP; echo ready; while :; do sleep 1; done", 0, 0)
	require.NoError(t, err)
	pollUntil(t, m, run.ID, contains("ready"))
	pid := m.pid(run.ID)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	snap, err := m.Kill(ctx, run.ID)
	require.NoError(t, err)
	assert.True(t, snap.Exited)
	require.NotNil(t, snap.ExitCode)
	assert.Equal(t, 128+int(syscall.SIGKILL), *snap.ExitCode)
	assert.Contains(t, snap.Output, "ready")
	assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestKillExited(t *testing.T) {
	m := newManager(t, Options{})
	snap := runToExit(t, m, "echo done_here", 0, 0)
	killed, err := m.Kill(testContext(t), snap.ID)
	require.NoError(t, err)
	assert.Equal(t, "done_here", killed.Output)
	assert.True(t, killed.Exited)
	assert.Empty(t, m.List())
}

func TestUnknownSession(t *testing.T) {
	m := newManager(t, Options{})
	ctx := testContext(t)
	const id = "00000000-0000-4000-8000-000000000000"

	_, err := m.Send(ctx, id, "echo x\n")
	assert.ErrorIs(t, err, ErrUnknownSession)
	assert.ErrorContains(t, err, "unknown terminal session: "+id)

	_, err = m.Output(ctx, id)
	assert.ErrorIs(t, err, ErrUnknownSession)
	assert.ErrorContains(t, err, "unknown terminal session: "+id)

	_, err = m.Kill(ctx, id)
	assert.ErrorIs(t, err, ErrUnknownSession)
	assert.ErrorContains(t, err, "unknown terminal session: "+id)
}

func TestSendToExited(t *testing.T) {
	m := newManager(t, Options{})
	snap := runToExit(t, m, "true", 0, 0)
	_, err := m.Send(testContext(t), snap.ID, "echo x\n")
	assert.ErrorIs(t, err, ErrExited)
	assert.ErrorContains(t, err, "terminal session has exited: "+snap.ID)
}

func TestList(t *testing.T) {
	m := newManager(t, Options{})
	ctx := testContext(t)

	empty := m.List()
	require.NotNil(t, empty)
	b, err := json.Marshal(empty)
	require.NoError(t, err)
	assert.Equal(t, "[]", string(b))

	r1, err := m.Run(ctx, "sleep 100", 0, 0)
	require.NoError(t, err)
	r2, err := m.Run(ctx, "exec sleep 101", 90, 30)
	require.NoError(t, err)

	assert.Equal(t, []Info{
		{ID: r1.ID, Command: "sleep 100", Alive: true, Cols: DefaultCols, Rows: DefaultRows},
		{ID: r2.ID, Command: "exec sleep 101", Alive: true, Cols: 90, Rows: 30},
	}, m.List())

	_, err = m.Kill(ctx, r1.ID)
	require.NoError(t, err)
	infos := m.List()
	require.Len(t, infos, 1)
	assert.Equal(t, r2.ID, infos[0].ID)
}

func TestExitedSessionStaysListed(t *testing.T) {
	m := newManager(t, Options{})
	snap := runToExit(t, m, "echo bye", 0, 0)
	assert.Equal(t, []Info{{ID: snap.ID, Command: "echo bye", Alive: false, Cols: DefaultCols, Rows: DefaultRows}}, m.List())

	again, err := m.Output(testContext(t), snap.ID)
	require.NoError(t, err)
	assert.Equal(t, "bye", again.Output)
}

func TestSize(t *testing.T) {
	m := newManager(t, Options{})
	snap := runToExit(t, m, "stty size", 90, 30)
	assert.Equal(t, "30 90", snap.Output)
	snap = runToExit(t, m, "stty size", 0, -1)
	assert.Equal(t, fmt.Sprintf("%d %d", DefaultRows, DefaultCols), snap.Output)

	_, err := m.Run(testContext(t), "true", MaxCols+1, 10)
	assert.Error(t, err)
	_, err = m.Run(testContext(t), "", 0, 0)
	assert.Error(t, err)
	assert.Len(t, m.List(), 2, "only the two sessions that started")
}

func TestEnvironment(t *testing.T) {
	m := newManager(t, Options{Env: []string{"FOO=bar", "TERM=dumb", "PATH=/usr/bin:/bin"}})
	snap := runToExit(t, m, `echo "$FOO $TERM"; test -t 0 && echo tty`, 0, 0)
	assert.Equal(t, "bar xterm-256color\ntty", snap.Output)
}

func TestShellOption(t *testing.T) {
	m := newManager(t, Options{Shell: bash})
	snap := runToExit(t, m, `echo "${BASH_VERSION:+is bash}"`, 0, 0)
	assert.Equal(t, "is bash", snap.Output)

	bad := newManager(t, Options{Shell: "/nonexistent/shell"})
	_, err := bad.Run(testContext(t), "true", 0, 0)
	assert.Error(t, err)
	assert.Empty(t, bad.List())
}

func TestMaxSessions(t *testing.T) {
	m := newManager(t, Options{MaxSessions: 2})
	ctx := testContext(t)

	gone := runToExit(t, m, "true", 0, 0)
	alive, err := m.Run(ctx, "sleep 100", 0, 0)
	require.NoError(t, err)

	// At the limit, the exited session makes room.
	third, err := m.Run(ctx, "sleep 100", 0, 0)
	require.NoError(t, err)
	ids := []string{}
	for _, info := range m.List() {
		ids = append(ids, info.ID)
	}
	assert.Equal(t, []string{alive.ID, third.ID}, ids)
	_, err = m.Output(ctx, gone.ID)
	assert.ErrorIs(t, err, ErrUnknownSession)

	// With no exited session, Run fails.
	_, err = m.Run(ctx, "sleep 100", 0, 0)
	assert.ErrorIs(t, err, ErrTooManySessions)
	assert.Len(t, m.List(), 2)
}

func TestClose(t *testing.T) {
	m := NewManager(Options{})
	ctx := testContext(t)
	var pids []int
	for range 3 {
		run, err := m.Run(ctx, "sleep 1000", 0, 0)
		require.NoError(t, err)
		pids = append(pids, m.pid(run.ID))
	}
	run, err := m.Run(ctx, bash+" --norc --noprofile", 0, 0)
	require.NoError(t, err)
	pids = append(pids, m.pid(run.ID))
	_, err = m.Send(ctx, run.ID, "sleep 1000\n")
	require.NoError(t, err)

	m.Close()
	for _, pid := range pids {
		require.NotZero(t, pid)
		assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "pid %d survived Close", pid)
	}
	assert.Empty(t, m.List())
	_, err = m.Run(ctx, "true", 0, 0)
	assert.ErrorIs(t, err, ErrClosed)
	m.Close() // a second Close is harmless
}

// TestOutputBounded checks that a flood of output leaves a snapshot of
// bounded size: the scrollback and the screen.
func TestOutputBounded(t *testing.T) {
	m := newManager(t, Options{})
	const rows = 24
	snap := runToExit(t, m, "seq 1 100000", 80, rows)
	lines := strings.Split(snap.Output, "\n")
	assert.LessOrEqual(t, len(lines), ScrollbackLines+rows)
	assert.Less(t, len(snap.Output), (ScrollbackLines+rows)*81)
	assert.Equal(t, "100000", lines[len(lines)-1])
	// The kept lines are the last ones, in order.
	first, err := strconv.Atoi(lines[0])
	require.NoError(t, err)
	assert.Equal(t, 100000-len(lines)+1, first)
}

// TestOutputWaitsForNewOutput checks that Output reports what arrived since
// the previous call, and that a send's output arrives in the snapshot.
func TestOutputWaitsForNewOutput(t *testing.T) {
	m := newManager(t, Options{})
	ctx := testContext(t)
	run, err := m.Run(ctx, "while read -r line; do echo \"got:$line\"; done", 0, 0)
	require.NoError(t, err)
	for i := range 3 {
		want := fmt.Sprintf("got:line%d", i)
		_, err := m.Send(ctx, run.ID, fmt.Sprintf("line%d\n", i))
		require.NoError(t, err)
		pollUntil(t, m, run.ID, contains(want))
	}
}

// TestCursorPositionReport checks that the terminal answers a program's
// cursor position query.
func TestCursorPositionReport(t *testing.T) {
	m := newManager(t, Options{Shell: bash})
	snap := runToExit(t, m,
		`stty -icanon -echo min 1; printf 'ab\033[6n'; IFS= read -r -d R pos; stty sane; printf '\nPOS=%s\n' "${pos#*[}"`, 0, 0)
	assert.Equal(t, "ab\nPOS=1;3", snap.Output)
}

func TestContextCancel(t *testing.T) {
	m := newManager(t, Options{})
	run, err := m.Run(testContext(t), "sleep 100", 0, 0)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.Output(ctx, run.ID)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = m.Send(ctx, run.ID, "x")
	assert.ErrorIs(t, err, context.Canceled)

	// A Run whose context ends before any output leaves no session behind.
	_, err = m.Run(ctx, "sleep 100", 0, 0)
	assert.ErrorIs(t, err, context.Canceled)
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	_, err = m.Run(short, "sleep 100", 0, 0)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.Len(t, m.List(), 1)
	assert.Equal(t, run.ID, m.List()[0].ID)
}

func TestConcurrentUse(t *testing.T) {
	m := newManager(t, Options{})
	ctx := testContext(t)
	run, err := m.Run(ctx, "for i in $(seq 1 200); do echo line$i; done; exec sleep 100", 40, 10)
	require.NoError(t, err)

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				_, err := m.Output(ctx, run.ID)
				assert.NoError(t, err)
				_ = m.List()
			}
		})
	}
	wg.Go(func() {
		for i := range 5 {
			_, err := m.Send(ctx, run.ID, strconv.Itoa(i))
			assert.NoError(t, err)
		}
	})
	wg.Wait()
	pollUntil(t, m, run.ID, contains("line200"))
}

// fastest returns the quickest of n Output calls on id (the machine may be
// busy: one slow call proves nothing) and the last snapshot.
func fastest(t *testing.T, m *Manager, id string, n int) (time.Duration, Snapshot) {
	t.Helper()
	ctx := testContext(t)
	best := time.Duration(1<<63 - 1)
	var snap Snapshot
	for range n {
		start := time.Now()
		var err error
		snap, err = m.Output(ctx, id)
		require.NoError(t, err)
		best = min(best, time.Since(start))
	}
	return best, snap
}

// TestOutputAnswersWhenQuiet checks that Output on a screen with nothing
// new answers once the screen has been quiet briefly, well before the 500
// ms that Run and Send wait for output.
func TestOutputAnswersWhenQuiet(t *testing.T) {
	m := newManager(t, Options{})
	run, err := m.Run(testContext(t), "echo ready; exec sleep 600", 0, 0)
	require.NoError(t, err)
	pollUntil(t, m, run.ID, contains("ready"))
	d, snap := fastest(t, m, run.ID, 3)
	assert.Less(t, d, 200*time.Millisecond, "Output on a quiet screen")
	assert.GreaterOrEqual(t, d, settleQuiet, "Output waits for the screen to be quiet")
	assert.Equal(t, "ready", snap.Output)
	assert.False(t, snap.Exited)
}

// TestOutputWhileStreaming checks that Output answers soon while output
// keeps arriving without pause, and that successive snapshots show every
// line, in order, as it grows.
func TestOutputWhileStreaming(t *testing.T) {
	m := newManager(t, Options{})
	run, err := m.Run(testContext(t), "i=0; while [ $i -lt 5000 ]; do i=$((i+1)); echo tick $i; sleep 0.005; done", 80, 24)
	require.NoError(t, err)
	pollUntil(t, m, run.ID, contains("tick 1\n"))
	last := 0
	for range 4 {
		d, snap := fastest(t, m, run.ID, 3)
		assert.Less(t, d, 300*time.Millisecond, "Output while output streams")
		require.False(t, snap.Exited)
		// The command may be starved of the processor for a while on a
		// busy machine: wait for it to add a line rather than assume it did.
		if strings.Count(snap.Output, "\n")+1 <= last {
			snap = pollUntil(t, m, run.ID, func(s Snapshot) bool { return strings.Count(s.Output, "\n")+1 > last })
		}
		lines := strings.Split(snap.Output, "\n")
		for i, line := range lines {
			require.Equal(t, fmt.Sprintf("tick %d", i+1), line, "line %d of %q", i+1, snap.Output)
		}
		assert.Greater(t, len(lines), last, "the output grows")
		last = len(lines)
	}
}
