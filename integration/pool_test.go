package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxOverlap is the largest number of [start, end] intervals that overlap.
func maxOverlap(intervals [][2]int64) int {
	type event struct {
		at    int64
		delta int
	}
	var events []event
	for _, iv := range intervals {
		events = append(events, event{iv[0], +1}, event{iv[1], -1})
	}
	sort.Slice(events, func(i, j int) bool {
		if events[i].at != events[j].at {
			return events[i].at < events[j].at
		}
		return events[i].delta < events[j].delta // ends first
	})
	cur, best := 0, 0
	for _, e := range events {
		cur += e.delta
		best = max(best, cur)
	}
	return best
}

// TestWorkerPoolConcurrency checks that with --workers N, at most N bash
// calls run at once. Each call records when it ran, with clock readings
// taken inside the command. The recorded intervals lie within the real
// ones, so their overlap never exceeds the real concurrency.
func TestWorkerPoolConcurrency(t *testing.T) {
	const calls = 4
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			s := startServer(t, testContext(t), serverOptions{args: []string{"--workers", strconv.Itoa(workers)}})
			dir := t.TempDir()
			var ids []string
			for i := 0; i < calls; i++ {
				id := strconv.Quote(fmt.Sprintf("c%d", i))
				ids = append(ids, id)
				cmd := fmt.Sprintf(`s=$(date +%%s%%N); sleep 0.5; e=$(date +%%s%%N); echo "$s $e" > %s/%d`, dir, i)
				s.callTool(fmt.Sprintf("c%d", i), "bash", map[string]any{"command": cmd})
			}
			for id, m := range s.expectSet(ids...) {
				assert.Equal(t, 0, m.bash(t).ExitCode, id)
			}
			var intervals [][2]int64
			for i := 0; i < calls; i++ {
				b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
				require.NoError(t, err)
				var iv [2]int64
				_, err = fmt.Sscan(string(b), &iv[0], &iv[1])
				require.NoError(t, err, "record %q", b)
				require.Less(t, iv[0], iv[1])
				intervals = append(intervals, iv)
			}
			assert.Equal(t, min(workers, calls), maxOverlap(intervals), "calls running at once: %v", intervals)
		})
	}
}

// TestTimeoutKillsProcessGroup checks that a timeout kills the whole
// process group, grandchildren included. It is reported as exit_code -1
// with stderr "timeout".
func TestTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	grandchild := sleepMarker(300)
	child := sleepMarker(300)
	killMarkedAtCleanup(t, grandchild)
	killMarkedAtCleanup(t, child)

	m := s.call("bash", map[string]any{
		"command": fmt.Sprintf("echo before; (sleep %s &) ; sleep %s", grandchild, child),
		"timeout": 0.5,
	})
	r := m.toolResult(t)
	assert.True(t, r.IsError)
	out := m.bash(t)
	assert.Equal(t, -1, out.ExitCode)
	assert.Equal(t, "timeout", out.Stderr)
	requireNoProcess(t, 5*time.Second, grandchild, child)

	// A timeout that is not reached changes nothing.
	m = s.call("bash", map[string]any{"command": "echo in-time", "timeout": 30})
	out = m.bash(t)
	assert.Equal(t, 0, out.ExitCode)
	assert.Equal(t, "in-time\n", out.Stdout)
	s.requireServing()
}

// TestKilledBySignal checks that a command killed by a signal reports 128+N
// and the signal's name.
func TestKilledBySignal(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	out := s.bash("kill -KILL $$")
	assert.Equal(t, 137, out.ExitCode)
	assert.Equal(t, "SIGKILL", out.Signal)
	out = s.bash("echo partial; kill -TERM $$")
	assert.Equal(t, 143, out.ExitCode)
	assert.Equal(t, "SIGTERM", out.Signal)
	assert.Equal(t, "partial\n", out.Stdout)
	out = s.bash("exit 7")
	assert.Equal(t, 7, out.ExitCode)
	assert.Empty(t, out.Signal)
}

// TestFreshShellPerCall checks that every call runs in a fresh shell:
// nothing one call does to its shell is seen by the next.
func TestFreshShellPerCall(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{args: []string{"--workers", "1"}})
	first := s.bash(`X=leaked; export Y=leaked; f() { echo func; }; alias ll='ls -l'; cd /; umask 077; set -u; echo $$`)
	require.Equal(t, 0, first.ExitCode, first.Stderr)
	for i := 0; i < 3; i++ { // the same worker, several times
		out := s.bash(`echo "${X-unset} ${Y-unset} ${UNDEFINED_VAR}"; pwd; command -v f || echo nofunc; command -v ll || echo noalias; umask; echo $0; echo $$`)
		require.Equal(t, 0, out.ExitCode, out.Stderr)
		lines := strings.Split(strings.TrimSuffix(out.Stdout, "\n"), "\n")
		require.Len(t, lines, 7, out.Stdout)
		assert.Equal(t, "unset unset ", lines[0], "variables and set -u do not leak")
		assert.Equal(t, s.dir, lines[1], "the directory does not leak")
		assert.Equal(t, "nofunc", lines[2], "functions do not leak")
		assert.Equal(t, "noalias", lines[3], "aliases do not leak")
		assert.Equal(t, "0022", lines[4], "umask does not leak")
		assert.Equal(t, "/bin/sh", lines[5], "$0 is the shell")
		assert.NotEqual(t, strings.TrimSpace(first.Stdout), lines[6], "$$ differs between calls")
		first.Stdout = lines[6]
	}
}

// TestShellOption checks that the shell's $0 is the --shell given.
func TestShellOption(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{args: []string{"--shell", "/bin/bash"}})
	out := s.bash(`echo "$0 ${BASH_VERSION:+bash}"`)
	assert.Equal(t, "/bin/bash bash\n", out.Stdout)
}

func TestBashCwdEnvStdin(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	dir := t.TempDir()

	t.Run("cwd", func(t *testing.T) {
		out := s.call("bash", map[string]any{"command": "pwd; echo made > here.txt", "cwd": dir}).bash(t)
		assert.Equal(t, dir+"\n", out.Stdout)
		b, err := os.ReadFile(filepath.Join(dir, "here.txt"))
		require.NoError(t, err)
		assert.Equal(t, "made\n", string(b))
	})
	t.Run("env", func(t *testing.T) {
		out := s.call("bash", map[string]any{
			"command": `echo "$GREETING|$EMPTY|${EMPTY+set}"; command -v ls >/dev/null && echo path-kept`,
			"env":     map[string]string{"GREETING": "hello world $HOME", "EMPTY": ""},
		}).bash(t)
		assert.Equal(t, "hello world $HOME||set\npath-kept\n", out.Stdout)
		out = s.bash(`echo "${GREETING-unset}"`)
		assert.Equal(t, "unset\n", out.Stdout, "env applies to its call only")
	})
	t.Run("cwd and env", func(t *testing.T) {
		out := s.call("bash", map[string]any{"command": `echo "$PWD $V"`, "cwd": dir, "env": map[string]string{"V": "v"}}).bash(t)
		assert.Equal(t, dir+" v\n", out.Stdout)
	})
	t.Run("stdin", func(t *testing.T) {
		out := s.call("bash", map[string]any{"command": "tr a-z A-Z", "stdin": "hello\nworld\n"}).bash(t)
		assert.Equal(t, "HELLO\nWORLD\n", out.Stdout)
		out = s.call("bash", map[string]any{"command": "cat; echo end", "timeout": 10}).bash(t)
		assert.Equal(t, "end\n", out.Stdout, "without stdin the command reads end of input")
	})
	s.requireServing()
}

// TestBashMissingCwd checks that a cwd that does not exist is a tool
// failure that names it.
func TestBashMissingCwd(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	m := s.call("bash", map[string]any{"command": "pwd", "cwd": missing})
	text := string(m.Raw)
	if m.Error != nil {
		text = m.Error.Message
	}
	assert.Contains(t, text, missing, "the failure must name the missing directory")
	if assert.Nil(t, m.Error, "a missing cwd is a tool failure, not a protocol error: %s", m.Raw) {
		assert.True(t, m.toolResult(t).IsError)
	}
	s.requireServing()
}

// TestOutputTruncated checks that each output stream is capped at 10 MiB,
// and flagged when cut.
func TestOutputTruncated(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	out := s.bash(`head -c 12582912 /dev/zero | tr '\0' x; head -c 11000000 /dev/zero | tr '\0' y >&2; echo tail >&2`)
	assert.Equal(t, 0, out.ExitCode)
	assert.Len(t, out.Stdout, 10<<20)
	assert.True(t, out.StdoutTruncated)
	assert.Equal(t, strings.Repeat("x", 10<<20), out.Stdout)
	assert.Len(t, out.Stderr, 10<<20)
	assert.True(t, out.StderrTruncated)

	out = s.bash(`head -c 10485760 /dev/zero | tr '\0' x`)
	assert.Len(t, out.Stdout, 10<<20)
	assert.False(t, out.StdoutTruncated, "exactly 10 MiB is not truncated")
	s.requireServing()
}

// TestBinaryOutputAnswered checks that binary output, as from `cat` on a
// binary file, is answered like any other. It is truncated at the same cap,
// as valid JSON with U+FFFD for the bytes that are not UTF-8.
func TestBinaryOutputAnswered(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	path := filepath.Join(t.TempDir(), "blob.bin")
	data := make([]byte, 12<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>8) // every byte value, NULs and invalid UTF-8 included
	}
	require.NoError(t, os.WriteFile(path, data, 0o644))

	id := s.newID()
	s.callTool(id, "bash", map[string]any{"command": "cat " + path})
	m, ok := s.tryNext(15 * time.Second)
	if !ok {
		_ = s.cmd.Process.Kill() // it would wait for the lost call at exit too
		t.Fatalf("no answer to `cat` of a 12 MiB binary file within 15s")
	}
	require.Equal(t, strconv.Quote(id), m.idString())
	require.True(t, utf8.Valid(m.Raw))
	require.True(t, json.Valid(m.Raw))
	out := m.bash(t)
	assert.Equal(t, 0, out.ExitCode)
	assert.True(t, out.StdoutTruncated)
	assert.True(t, strings.HasPrefix(out.Stdout, "\x00\a\x0e\x15"), "%q", out.Stdout[:8])
	assert.Contains(t, out.Stdout, "\uFFFD")
	s.requireServing()
}

// TestLongCommand checks that long commands run too, beyond what a warm
// shell is handed.
func TestLongCommand(t *testing.T) {
	t.Parallel()
	s := startServer(t, testContext(t), serverOptions{})
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, "v%d=%d\n", i, i) // about 30 KB of script
	}
	b.WriteString(`echo "$v0 $v2999"`)
	out := s.bash(b.String())
	assert.Equal(t, 0, out.ExitCode, out.Stderr)
	assert.Equal(t, "0 2999\n", out.Stdout)
}

// waitingProbe is a command that looks for the processes boxsh-init keeps
// waiting beside it: the fork server and warm shells, boxsh-init's other
// children. It tries to open each one's memory for reading and for writing.
// It prints "open PID MODE" for each open that succeeds, and "waiting=N"
// for the processes it found. Through /proc/PID/mem a command could plant
// code in the shell of a later call.
const waitingProbe = `me=$$; parent=$PPID; n=0
for d in /proc/[0-9]*; do
  p=${d#/proc/}; [ "$p" = "$me" ] && continue
  pp=; while read -r k v; do [ "$k" = PPid: ] && pp=$v; done < "$d/status" 2>/dev/null
  [ "$pp" = "$parent" ] || continue
  n=$((n+1))
  (exec 5<"$d/mem") 2>/dev/null && echo "open $p read"
  (exec 5<>"$d/mem") 2>/dev/null && echo "open $p write"
done
echo "waiting=$n"`

// TestWaitingProcessesClosedToCommands checks that no command can read or
// write the memory of a process the pool keeps waiting for a later call:
// the fork server and the warm shells. That holds in plain and sandbox
// mode. The command's own processes stay open to it, for what relies on
// being dumpable: /proc/self, /proc/$$/fd, a background job's /proc files.
//
// As real root a plain command may open any process's memory
// (CAP_SYS_PTRACE). So, like every escape test, it runs only as an
// unprivileged user.
func TestWaitingProcessesClosedToCommands(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	inBothModes(t, func(t *testing.T, args []string) {
		s := startServer(t, testContext(t), serverOptions{args: append(args, "--workers", "3")})
		for range 3 { // every worker's warm shell started
			s.requireServing()
		}
		// Probed until the warm shells of the two other workers are
		// back, waiting beside the probe's own.
		var out bashOutput
		waiting := 0
		for deadline := time.Now().Add(10 * time.Second); waiting < 2 && time.Now().Before(deadline); {
			out = s.bash(waitingProbe)
			require.Equal(t, 0, out.ExitCode, out.Stderr)
			assert.NotContains(t, out.Stdout, "open ", "a command opened a waiting process's memory")
			_, n, _ := strings.Cut(out.Stdout, "waiting=")
			waiting, _ = strconv.Atoi(strings.TrimSpace(n))
		}
		assert.GreaterOrEqual(t, waiting, 2, "the probe found the other workers' warm shells: %s", out.Stdout)
		t.Logf("probe: %s", out.Stdout)

		out = s.bash(`(exec 5<>/proc/$$/mem) && echo own-mem
grep -q '^Pid:' /proc/self/status && echo self-status
ls -l /proc/$$/fd >/dev/null && echo own-fd
sleep 5 & bg=$!
# The background child is the shell until it has executed sleep.
i=0; while [ $i -lt 200 ] && [ "$(tr '\0' ' ' </proc/$bg/cmdline)" != "sleep 5 " ]; do i=$((i+1)); sleep 0.01; done
tr '\0' ' ' </proc/$bg/cmdline; echo
(exec 5<>/proc/$bg/mem) && echo bg-mem
ls /proc/$bg/fd >/dev/null && echo bg-fd
kill $bg`)
		assert.Equal(t, "own-mem\nself-status\nown-fd\nsleep 5 \nbg-mem\nbg-fd\n", out.Stdout, out.Stderr)
	})
}

// TestBashRunsOnWarmShells checks that bash calls run on warm shells cloned
// from the fork server, as installed. The shell of a call has the fork
// server's library mapped. The first call of a cold start may start its
// shell by exec, while the fork server starts.
func TestBashRunsOnWarmShells(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the fork server is Linux's")
	}
	inBothModes(t, func(t *testing.T, args []string) {
		s := startServer(t, testContext(t), serverOptions{args: args})
		s.requireServing()
		warm := 0
		for range 20 {
			out := s.bash(`grep -c ` + forkServerLib + ` /proc/$$/maps || true`)
			if strings.TrimSpace(out.Stdout) != "0" {
				warm++
			}
		}
		assert.GreaterOrEqual(t, warm, 15, "calls on warm shells, of 20")
	})
}
