package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStdinClosedWhileCallsRun checks that when stdin closes, calls still
// running are finished and answered before boxsh exits with status 0.
func TestStdinClosedWhileCallsRun(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, args []string) {
		s := startServer(t, testContext(t), serverOptions{args: args})
		s.callTool("slow", "bash", map[string]any{"command": "sleep 1; echo done"})
		s.callTool("quick", "bash", map[string]any{"command": "echo quick"})
		s.request("ping", "ping", nil)
		rest := s.drain()
		byID := map[string]message{}
		for _, m := range rest {
			byID[m.idString()] = m
		}
		require.Len(t, byID, 3, "every request answered once: %v", rest)
		require.Len(t, rest, 3)
		assert.Equal(t, "done\n", byID[`"slow"`].bash(t).Stdout)
		assert.Equal(t, "quick\n", byID[`"quick"`].bash(t).Stdout)
		assert.JSONEq(t, `{}`, string(byID[`"ping"`].Result))
		s.requireExitZero()
	})
}

// TestNoOrphansAfterExit checks that a command that leaves a background
// process behind is answered. Once boxsh has exited, no process of the
// command remains.
func TestNoOrphansAfterExit(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, args []string) {
		s := startServer(t, testContext(t), serverOptions{args: args})
		quiet := sleepMarker(300)
		loud := sleepMarker(300) // keeps the output pipes open
		killMarkedAtCleanup(t, quiet)
		killMarkedAtCleanup(t, loud)

		out := s.bash(fmt.Sprintf("sleep %s >/dev/null 2>&1 & echo started", quiet))
		assert.Equal(t, "started\n", out.Stdout)
		out = s.bash(fmt.Sprintf("sleep %s & echo started-too", loud))
		assert.Equal(t, "started-too\n", out.Stdout, "the answer does not wait for a background process holding stdout")
		waitForProcess(t, quiet)
		waitForProcess(t, loud)
		init := findChild(t, s.pid(), "boxsh-init")

		s.requireExitZero()
		requireNoProcess(t, 5*time.Second, quiet, loud)
		requireGone(t, init, "boxsh-init")
	})
}

// requireGone requires that pid, a process named comm, has ended (or is a
// zombie) within a few seconds.
func requireGone(t *testing.T, pid int, comm string) {
	t.Helper()
	assert.Eventually(t, func() bool { return procComm(pid) != comm || isZombie(pid) },
		5*time.Second, 20*time.Millisecond, "%s (pid %d) still running", comm, pid)
}

func isZombie(pid int) bool {
	b, err := readProcFile(pid, "stat")
	if err != nil {
		return true
	}
	// pid (comm) S ...
	i := strings.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// TestCancelRunningCall checks that notifications/cancelled of a running
// call kills its process group, and that no answer is sent for the call.
// The next call works.
func TestCancelRunningCall(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, args []string) {
		s := startServer(t, testContext(t), serverOptions{args: args})
		marker := sleepMarker(30)
		child := sleepMarker(30)
		killMarkedAtCleanup(t, marker)
		killMarkedAtCleanup(t, child)

		s.callTool(5, "bash", map[string]any{"command": fmt.Sprintf("(sleep %s &); sleep %s; echo finished", child, marker)})
		waitForProcess(t, marker)
		waitForProcess(t, child)
		s.request(noID, "notifications/cancelled", map[string]any{"requestId": 5, "reason": "user pressed stop"})
		requireNoProcess(t, 5*time.Second, marker, child)

		// The next call is answered, and is the next response.
		s.requireServing()
		// A cancellation of an unknown or finished request is ignored.
		s.request(noID, "notifications/cancelled", map[string]any{"requestId": 99})
		s.request(noID, "notifications/cancelled", map[string]any{"requestId": 5})
		s.requireServing()

		for _, m := range s.drain() {
			t.Errorf("unexpected response after the cancellation: %s", truncate(m.Raw))
		}
		s.requireExitZero()
	})
}

// TestCancelQueuedCall checks that a call cancelled while it waits for a
// worker never runs and is not answered.
func TestCancelQueuedCall(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{args: []string{"--workers", "1"}})
	dir := t.TempDir()
	s.callTool("busy", "bash", map[string]any{"command": "sleep 0.5; echo busy"})
	s.callTool("queued", "bash", map[string]any{"command": "touch ran", "cwd": dir})
	s.request(noID, "notifications/cancelled", map[string]any{"requestId": "queued"})
	assert.Equal(t, "busy\n", s.expect(`"busy"`).bash(t).Stdout)
	s.requireServing()
	out := s.bash("ls -A " + dir)
	assert.Empty(t, out.Stdout, "the cancelled call must not run")
	assert.Empty(t, s.drain())
	s.requireExitZero()
}

// TestStalledClientMemory checks that boxsh does not buffer without bound
// for a client that stops reading. Many calls each print a large output
// that is not read. boxsh, front and children, must stay under a generous
// memory bound. Once the client reads again, every answer arrives.
func TestStalledClientMemory(t *testing.T) {
	t.Parallel()
	const (
		calls   = 300
		outSize = 1 << 20
		limit   = 400 << 10 // KiB
	)
	s := startServer(t, testContext(t), serverOptions{manualRead: true})
	cmd := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", outSize)
	var writes sync.WaitGroup
	writes.Add(1)
	go func() {
		defer writes.Done()
		for i := 0; i < calls; i++ {
			if _, err := s.stdin.Write(append(requestJSON(i, "tools/call", callParams("bash", map[string]any{"command": cmd})), '\n')); err != nil {
				t.Errorf("write call %d: %v", i, err)
				return
			}
		}
	}()

	// Watch memory while nothing is read. Stop early once over the limit,
	// so that a failing boxsh does not take the machine's memory.
	var peak int64
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end) && peak <= limit; time.Sleep(50 * time.Millisecond) {
		peak = max(peak, treeRSSKiB(s.pid()))
	}
	assert.LessOrEqual(t, peak, int64(limit), "boxsh RSS (front + children) while the client does not read: %d MiB", peak>>10)
	t.Logf("peak RSS while stalled: %d MiB", peak>>10)

	s.startReading()
	seen := map[int]bool{}
	for len(seen) < calls {
		m := s.next()
		id, err := strconv.Atoi(string(m.ID))
		require.NoError(t, err, "id %s", m.ID)
		require.False(t, seen[id], "id %d answered twice", id)
		seen[id] = true
		var r struct {
			StructuredContent struct {
				ExitCode int    `json:"exit_code"`
				Stdout   string `json:"stdout"`
			} `json:"structuredContent"`
		}
		require.NoError(t, json.Unmarshal(m.Result, &r), "answer %d", id)
		require.Equal(t, 0, r.StructuredContent.ExitCode, "answer %d", id)
		require.Len(t, r.StructuredContent.Stdout, outSize, "answer %d", id)
	}
	writes.Wait()
	assert.Empty(t, s.drain())
	s.requireExitZero()
}

// TestBoxshInitKilled checks that when boxsh-init dies, the call it was
// running is answered as failed. The next call runs on a fresh boxsh-init.
func TestBoxshInitKilled(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, args []string) {
		s := startServer(t, testContext(t), serverOptions{args: args})
		s.requireServing()
		init := findChild(t, s.pid(), "boxsh-init")
		marker := sleepMarker(30)
		killMarkedAtCleanup(t, marker)

		s.callTool("victim", "bash", map[string]any{"command": "sleep " + marker})
		waitForProcess(t, marker)
		require.NoError(t, syscall.Kill(init, syscall.SIGKILL))

		m := s.expect(`"victim"`)
		if m.Error == nil {
			r := m.toolResult(t)
			assert.True(t, r.IsError, "the lost call must fail: %s", m.Raw)
			assert.Contains(t, r.text(), "boxsh-init")
		}

		s.requireServing()
		fresh := findChild(t, s.pid(), "boxsh-init")
		assert.NotEqual(t, init, fresh, "a new boxsh-init runs the next call")
		s.requireServing()
		assert.Empty(t, s.drain())
		s.requireExitZero()
	})
}

// TestNoOrphansAfterBoxshInitKilled checks that the command a killed
// boxsh-init was running does not outlive boxsh.
func TestNoOrphansAfterBoxshInitKilled(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, args []string) {
		s := startServer(t, testContext(t), serverOptions{args: args})
		marker := sleepMarker(30)
		killMarkedAtCleanup(t, marker)
		s.callTool("victim", "bash", map[string]any{"command": "sleep " + marker})
		waitForProcess(t, marker)
		require.NoError(t, syscall.Kill(findChild(t, s.pid(), "boxsh-init"), syscall.SIGKILL))
		s.expect(`"victim"`)
		s.requireServing()
		assert.Empty(t, s.drain())
		s.requireExitZero()
		requireNoProcess(t, 5*time.Second, marker)
	})
}

// TestSIGTERM checks that SIGTERM makes boxsh exit promptly and leave no
// process behind, even with its input still open and a call running.
func TestSIGTERM(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, args []string) {
		s := startServer(t, testContext(t), serverOptions{args: args})
		marker := sleepMarker(300)
		killMarkedAtCleanup(t, marker)
		s.callTool(1, "bash", map[string]any{"command": "sleep " + marker})
		waitForProcess(t, marker)
		init := findChild(t, s.pid(), "boxsh-init")

		require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-s.exited:
		case <-time.After(8 * time.Second):
			t.Errorf("boxsh still running 8s after SIGTERM (its stdin still open)")
		}
		requireNoProcess(t, 5*time.Second, marker)
		requireGone(t, init, "boxsh-init")
	})
}

// inBothModes runs test without and (rootless only) with --sandbox, args
// being the flags to start boxsh with.
func inBothModes(t *testing.T, test func(t *testing.T, args []string)) {
	t.Run("plain", func(t *testing.T) { test(t, nil) })
	t.Run("sandbox", func(t *testing.T) {
		requireRootless(t)
		test(t, []string{"--sandbox"})
	})
}

// inBothModesIn is inBothModes with a fresh working directory for boxsh,
// bound wr: in the sandbox.
func inBothModesIn(t *testing.T, test func(t *testing.T, args []string, dir string)) {
	t.Run("plain", func(t *testing.T) { test(t, nil, t.TempDir()) })
	t.Run("sandbox", func(t *testing.T) {
		requireRootless(t)
		dir := t.TempDir()
		test(t, []string{"--sandbox", "--bind", "wr:" + dir}, dir)
	})
}

// killFront kills boxsh with SIGKILL, as a crash or an impatient client
// would, and returns when. It waits for the process to die, not for the
// end of its output, which its children may hold.
func killFront(t *testing.T, s *server) time.Time {
	t.Helper()
	at := time.Now()
	require.NoError(t, s.cmd.Process.Kill())
	require.Eventually(t, func() bool { return isZombie(s.pid()) }, 5*time.Second, time.Millisecond)
	return at
}

// requireAllGoneBy requires that boxsh-init (pid init) and every process
// with one of the markers are gone by the deadline. Survivors are killed.
func requireAllGoneBy(t *testing.T, deadline time.Time, init int, markers ...string) {
	t.Helper()
	gone := func() bool {
		if procComm(init) == "boxsh-init" && !isZombie(init) {
			return false
		}
		for _, m := range markers {
			if len(pidsWithArg(m)) > 0 {
				return false
			}
		}
		return true
	}
	for !gone() {
		if time.Now().After(deadline) {
			if procComm(init) == "boxsh-init" && !isZombie(init) {
				_ = syscall.Kill(init, syscall.SIGKILL)
				t.Errorf("boxsh-init (pid %d) outlived the front by more than the deadline", init)
			}
			requireNoProcess(t, 0, markers...)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFrontKilledEndsCalls checks that after kill -9 of the front,
// boxsh-init and the commands it runs are gone within a second. A call
// still waiting for a worker never runs.
func TestFrontKilledEndsCalls(t *testing.T) {
	t.Parallel()
	inBothModesIn(t, func(t *testing.T, args []string, dir string) {
		s := startServer(t, testContext(t), serverOptions{args: append(args, "--workers", "1", "--log-level", "trace"), dir: dir})
		s.requireServing()
		init := findChild(t, s.pid(), "boxsh-init")
		marker := sleepMarker(3)
		escaped := sleepMarker(30) // in a session of its own
		// The shells that would write A and B carry markers of their own
		// (and those of their sleeps only in halves): once every marked
		// process is gone, nothing is left to write them. They write
		// without a child (a redirection), which could outlive them.
		shell, queued := sleepMarker(0), sleepMarker(0)
		killMarkedAtCleanup(t, marker)
		killMarkedAtCleanup(t, escaped)
		killMarkedAtCleanup(t, shell)
		killMarkedAtCleanup(t, queued)
		half := func(m string) string { return " " + m[:2] + " " + m[2:] }
		s.callTool("running", "bash", map[string]any{"command": `exec sh -c 'setsid sleep "$1$2" & sleep "$3$4"; : > A' ` + shell + half(escaped) + half(marker)})
		waitForProcess(t, marker)
		waitForProcess(t, escaped)
		s.callTool("queued", "bash", map[string]any{"command": "exec sh -c ': > B' " + queued})
		s.waitQueued(1)

		killed := killFront(t, s)
		requireAllGoneBy(t, killed.Add(time.Second), init, marker, escaped, shell, queued)
		assert.NoFileExists(t, filepath.Join(dir, "A"), "the running command finished after the front died")
		assert.NoFileExists(t, filepath.Join(dir, "B"), "the queued call ran after the front died")
	})
}

// TestFrontKilledDuringBlockedFileCalls checks that calls blocked in the
// kernel do not keep boxsh-init alive after kill -9 of the front. The calls
// open a FIFO nobody writes, or write one nobody reads.
func TestFrontKilledDuringBlockedFileCalls(t *testing.T) {
	t.Parallel()
	inBothModesIn(t, func(t *testing.T, args []string, dir string) {
		notes, out := filepath.Join(dir, "notes.md"), filepath.Join(dir, "out.md")
		require.NoError(t, syscall.Mkfifo(notes, 0o644))
		require.NoError(t, syscall.Mkfifo(out, 0o644))
		s := startServer(t, testContext(t), serverOptions{args: args, dir: dir})
		s.requireServing()
		init := findChild(t, s.pid(), "boxsh-init")
		marker := sleepMarker(30)
		killMarkedAtCleanup(t, marker)
		s.callTool("read", "read", map[string]any{"path": notes})
		s.callTool("write", "write", map[string]any{"path": out, "content": "stuck"})
		s.callTool("sleep", "bash", map[string]any{"command": "sleep " + marker})
		waitForProcess(t, marker)
		time.Sleep(200 * time.Millisecond) // the file calls block in open

		killed := killFront(t, s)
		requireAllGoneBy(t, killed.Add(time.Second), init, marker)
	})
}

// TestEndOfInputWithBlockedCall checks what happens at the end of input:
//   - calls that finish are answered, as boxsh v3 does;
//   - a file call blocked on a FIFO is cancelled and answered with an error
//     after EndOfInputGrace;
//   - boxsh exits with nothing left running.
func TestEndOfInputWithBlockedCall(t *testing.T) {
	t.Parallel()
	inBothModesIn(t, func(t *testing.T, args []string, dir string) {
		notes := filepath.Join(dir, "notes.md")
		require.NoError(t, syscall.Mkfifo(notes, 0o644))
		s := startServer(t, testContext(t), serverOptions{args: args, dir: dir})
		s.requireServing()
		init := findChild(t, s.pid(), "boxsh-init")
		s.callTool("read", "read", map[string]any{"path": notes})
		s.callTool("slow", "bash", map[string]any{"command": "sleep 1; echo done"})

		closed := time.Now()
		rest := s.drain()
		byID := map[string]message{}
		for _, m := range rest {
			byID[m.idString()] = m
		}
		require.Len(t, byID, 2, "every call answered once: %v", rest)
		assert.Equal(t, "done\n", byID[`"slow"`].bash(t).Stdout)
		r := byID[`"read"`].toolResult(t)
		assert.True(t, r.IsError, "the blocked read is answered as failed: %s", byID[`"read"`].Raw)
		assert.Contains(t, r.text(), "end of input")
		s.requireExitZero()
		assert.Less(t, time.Since(closed), endOfInputGrace+2*time.Second, "boxsh exits promptly after the end of its input")
		requireAllGoneBy(t, time.Now().Add(time.Second), init)
	})
}

// endOfInputGrace is how long boxsh lets calls other than bash run after the
// end of its input (rpc.EndOfInputGrace).
const endOfInputGrace = 5 * time.Second

// TestInterruptedWriteLeavesNothing interrupts a write by the death of
// boxsh-init, and so of the front, which dies with it. No temporary file
// may be left in the user's directory, and the target is either as before
// or complete. boxsh-init is killed as soon as a temporary file shows, or
// at points spread over a write's duration.
func TestInterruptedWriteLeavesNothing(t *testing.T) {
	t.Parallel()
	inBothModesIn(t, func(t *testing.T, args []string, dir string) {
		s := startServer(t, testContext(t), serverOptions{args: args, dir: dir})
		target := filepath.Join(dir, "big.md")
		content := strings.Repeat("boxsh writes this line.\n", 20<<20/24)
		// How long an uninterrupted write takes.
		start := time.Now()
		r := s.call("write", map[string]any{"path": target, "content": content}).toolResult(t)
		require.False(t, r.IsError, r.text())
		took := time.Since(start)
		require.NoError(t, os.Remove(target))

		for i := range 4 {
			init := findChild(t, s.pid(), "boxsh-init")
			id := s.newID()
			sent := time.Now()
			s.callTool(id, "write", map[string]any{"path": target, "content": content})
			// The first time, late enough for any temporary file to show;
			// then at points within the write.
			at := sent.Add(took * []time.Duration{15, 3, 6, 9}[i] / 10)
			for time.Now().Before(at) && len(temporaries(t, dir)) == 0 {
				time.Sleep(100 * time.Microsecond)
			}
			require.NoError(t, syscall.Kill(init, syscall.SIGKILL))
			s.expect(strconv.Quote(id))
			// Reaped by its parent (the front, or the sandbox's
			// launcher): gone with every thread, its end of the frame
			// socket closed. (A zombie leader may still have threads
			// holding it, and a call sent then is lost.)
			require.Eventually(t, func() bool {
				_, err := os.Stat("/proc/" + strconv.Itoa(init))
				return os.IsNotExist(err)
			}, 5*time.Second, 5*time.Millisecond, "boxsh-init %d not reaped", init)
			left := temporaries(t, dir)
			assert.Empty(t, left, "left behind by a write killed after %v", time.Since(sent))
			for _, name := range left {
				_ = os.Remove(filepath.Join(dir, name))
			}
			if b, err := os.ReadFile(target); err == nil {
				assert.Equal(t, len(content), len(b), "a partial file at the target")
			}
			_ = os.Remove(target)
			s.requireServing() // and a new boxsh-init
		}
	})
}

// temporaries lists the temporary files of writes of big.md in dir.
func temporaries(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".big.md.") {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestBoxshInitKilledCommandsDieAtOnce checks that when boxsh-init dies,
// the commands it was running die at once, not when the next call comes.
// The next call runs on a new boxsh-init.
func TestBoxshInitKilledCommandsDieAtOnce(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, args []string) {
		s := startServer(t, testContext(t), serverOptions{args: args})
		marker := sleepMarker(30)
		child := sleepMarker(30)
		killMarkedAtCleanup(t, marker)
		killMarkedAtCleanup(t, child)
		s.callTool("victim", "bash", map[string]any{"command": fmt.Sprintf("(setsid sleep %s &); sleep %s", child, marker)})
		waitForProcess(t, marker)
		waitForProcess(t, child)
		init := findChild(t, s.pid(), "boxsh-init")
		killed := time.Now()
		require.NoError(t, syscall.Kill(init, syscall.SIGKILL))
		requireAllGoneBy(t, killed.Add(time.Second), init, marker, child)
		s.expect(`"victim"`)
		s.requireServing()
	})
}

// TestQueuedCallsSurviveBoxshInitDeath checks that when boxsh-init dies,
// the calls it had queued, waiting for a worker, run on the new one. The
// call it was running fails.
func TestQueuedCallsSurviveBoxshInitDeath(t *testing.T) {
	t.Parallel()
	inBothModes(t, func(t *testing.T, args []string) {
		s := startServer(t, testContext(t), serverOptions{args: append(args, "--workers", "1", "--log-level", "trace")})
		s.requireServing()
		init := findChild(t, s.pid(), "boxsh-init")
		marker := sleepMarker(30)
		killMarkedAtCleanup(t, marker)
		s.callTool("running", "bash", map[string]any{"command": "sleep " + marker})
		waitForProcess(t, marker)
		for i := range 5 {
			s.callTool(fmt.Sprintf("queued-%d", i), "bash", map[string]any{"command": fmt.Sprintf("echo ran-%d", i)})
		}
		s.waitQueued(5)
		require.NoError(t, syscall.Kill(init, syscall.SIGKILL))

		m := s.expect(`"running"`)
		require.Nil(t, m.Error, "%s", m.Raw)
		assert.True(t, m.toolResult(t).IsError, "the running call fails: %s", m.Raw)
		for i := range 5 {
			m := s.expect(fmt.Sprintf(`"queued-%d"`, i))
			assert.Equal(t, fmt.Sprintf("ran-%d\n", i), m.bash(t).Stdout, "queued call %d, in order, on the new boxsh-init", i)
		}
		assert.NotEqual(t, init, findChild(t, s.pid(), "boxsh-init"))
		assert.Empty(t, s.drain())
		s.requireExitZero()
	})
}

// TestQueuedFileCallsSurviveBoxshInitDeath checks that when boxsh-init
// dies, the file calls that waited for a slot run on the new one, as queued
// bash calls do. The slots are all taken by reads blocked on a FIFO; those
// fail.
func TestQueuedFileCallsSurviveBoxshInitDeath(t *testing.T) {
	t.Parallel()
	inBothModesIn(t, func(t *testing.T, args []string, dir string) {
		fifo, plain := filepath.Join(dir, "fifo"), filepath.Join(dir, "plain.txt")
		require.NoError(t, syscall.Mkfifo(fifo, 0o644))
		require.NoError(t, os.WriteFile(plain, []byte("content\n"), 0o644))
		s := startServer(t, testContext(t), serverOptions{args: append(args, "--log-level", "trace"), dir: dir})
		s.requireServing()
		init := findChild(t, s.pid(), "boxsh-init")
		const slots = 16 // agent.Config.MaxOtherCalls's default
		for i := range slots {
			s.callTool(fmt.Sprintf("blocked-%d", i), "read", map[string]any{"path": fifo})
		}
		for i := range 3 {
			s.callTool(fmt.Sprintf("queued-%d", i), "read", map[string]any{"path": plain})
		}
		s.waitQueued(3) // the others wait for a slot, all taken by the reads
		require.NoError(t, syscall.Kill(init, syscall.SIGKILL))

		var ids []string
		for i := range slots {
			ids = append(ids, fmt.Sprintf(`"blocked-%d"`, i))
		}
		for i := range 3 {
			ids = append(ids, fmt.Sprintf(`"queued-%d"`, i))
		}
		got := s.expectSet(ids...) // answered in any order
		for i := range slots {
			m := got[fmt.Sprintf(`"blocked-%d"`, i)]
			require.Nil(t, m.Error, "%s", m.Raw)
			assert.True(t, m.toolResult(t).IsError, "a call that was running fails: %s", m.Raw)
		}
		for i := range 3 {
			m := got[fmt.Sprintf(`"queued-%d"`, i)]
			r := m.toolResult(t)
			assert.False(t, r.IsError, "queued call %d runs on the new boxsh-init: %s", i, m.Raw)
			assert.Contains(t, r.text(), "content")
		}
		assert.NotEqual(t, init, findChild(t, s.pid(), "boxsh-init"))
	})
}
