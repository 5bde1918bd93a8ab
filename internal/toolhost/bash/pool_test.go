package bash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/tool"
)

// forkServer is the fork-server library the tests use: the one `just
// build` put in BOXSH_BIN_DIR, or one built from zygote/zygote.c; empty
// where none could be built (forkServerErr says why).
var forkServer string
var forkServerErr error

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "boxsh-bash-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	forkServer, forkServerErr = findForkServer(dir)
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func findForkServer(dir string) (string, error) {
	if goruntime.GOOS != "linux" {
		return "", errors.New("the fork server is Linux's")
	}
	if bin := os.Getenv("BOXSH_BIN_DIR"); bin != "" {
		lib := filepath.Join(bin, proc.ForkServerName)
		_, err := os.Stat(lib)
		return lib, err
	}
	lib := filepath.Join(dir, proc.ForkServerName)
	out, err := exec.Command("cc", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", lib, "zygote/zygote.c").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cc: %v: %s", err, out)
	}
	return lib, nil
}

// execMode in Options.ForkServer makes newPool start every shell by exec.
const execMode = "(exec)"

// newPool starts a pool for t, with the fork server unless opts ask for
// execMode.
func newPool(t *testing.T, opts Options) *Pool {
	t.Helper()
	switch opts.ForkServer {
	case "":
		requireForkServer(t)
		opts.ForkServer = forkServer
	case execMode:
		opts.ForkServer = ""
	}
	p, err := NewPool(opts)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	<-p.warmedUp
	if opts.ForkServer != "" {
		require.NotNil(t, p.zygote.Load(), "the pool runs a zygote")
	}
	return p
}

func requireForkServer(t *testing.T) {
	t.Helper()
	if forkServer == "" {
		t.Skipf("no fork-server library on this platform: %v", forkServerErr)
	}
}

// inBothModes runs test with warm shells cloned from a zygote and with warm
// shells started by exec; test passes mode on as Options.ForkServer.
func inBothModes(t *testing.T, test func(t *testing.T, mode string)) {
	t.Run("zygote", func(t *testing.T) { requireForkServer(t); test(t, forkServer) })
	t.Run("exec", func(t *testing.T) { test(t, execMode) })
}

func run(t *testing.T, p *Pool, args tool.BashArgs) tool.BashOutput {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := p.Run(ctx, nil, args)
	require.NoError(t, err)
	return out
}

func TestOutputAndExitCodes(t *testing.T) { inBothModes(t, testOutputAndExitCodes) }

func testOutputAndExitCodes(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 2, ForkServer: mode})
	out := run(t, p, tool.BashArgs{Command: "echo out; echo err >&2; exit 42"})
	assert.Equal(t, "out\n", out.Stdout)
	assert.Equal(t, "err\n", out.Stderr)
	assert.Equal(t, 42, out.ExitCode)

	out = run(t, p, tool.BashArgs{Command: "printf 'no newline'"})
	assert.Equal(t, "no newline", out.Stdout)
	assert.Equal(t, 0, out.ExitCode)

	out = run(t, p, tool.BashArgs{Command: "kill -9 $$"})
	assert.Equal(t, 137, out.ExitCode)
	assert.Equal(t, "SIGKILL", out.Signal)

	out = run(t, p, tool.BashArgs{Command: "if"})
	assert.Equal(t, 2, out.ExitCode, "a syntax error exits 2 as with sh -c")
	assert.Contains(t, out.Stderr, "Syntax error")
}

func TestFreshShellPerCall(t *testing.T) { inBothModes(t, testFreshShellPerCall) }

func testFreshShellPerCall(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 1, ForkServer: mode})
	run(t, p, tool.BashArgs{Command: "LEAK=yes; f() { :; }; cd /tmp; alias x=echo"})
	out := run(t, p, tool.BashArgs{Command: `echo "${LEAK:-unset} $(command -v f || echo nofunc) $(pwd) $0 $#"; alias x || true; set | grep -c __boxsh || true`})
	wd, _ := os.Getwd()
	assert.Equal(t, fmt.Sprintf("unset nofunc %s /bin/sh 0\n0\n", wd), out.Stdout)

	a := run(t, p, tool.BashArgs{Command: "echo $$"})
	b := run(t, p, tool.BashArgs{Command: "echo $$"})
	assert.NotEqual(t, a.Stdout, b.Stdout, "each call is a new process")

	out = run(t, p, tool.BashArgs{Command: "ls /proc/self/fd | sort -n | tr '\\n' ' '"})
	assert.NotContains(t, " "+out.Stdout, " 3 4 ", "the command channel does not leak into commands: %s", out.Stdout)
}

func TestMultiLineAndSpecialCommands(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	cmd := "x='a  b\\c'\nprintf '%s|' \"$x\"\ncat <<EOF\n  indented\\\\ $x\nEOF\n\n"
	out := run(t, p, tool.BashArgs{Command: cmd})
	assert.Equal(t, "a  b\\c|  indented\\ a  b\\c\n", out.Stdout)

	long := "echo " + strings.Repeat("y", 20<<10)
	out = run(t, p, tool.BashArgs{Command: long})
	assert.Equal(t, strings.Repeat("y", 20<<10)+"\n", out.Stdout)
}

// Without a zygote no shell waits for its call: a shell started by exec
// ahead of its call would be dumpable while it waits (see the package
// doc). Calls start theirs by exec.
func TestNoWarmShellWithoutZygote(t *testing.T) {
	p := newPool(t, Options{Workers: 2, ForkServer: execMode})
	assert.ErrorIs(t, p.startShell(nil).err, errNoZygote)
	out := run(t, p, tool.BashArgs{Command: "echo $0"})
	assert.Equal(t, "/bin/sh\n", out.Stdout)
	_, err := NewPool(Options{Shell: "/nonexistent/sh", ForkServer: ""})
	assert.ErrorContains(t, err, "/nonexistent/sh", "a shell that does not start is an error at once")
}

// assertRunsNothing sends warm shell s part of a command and checks that
// it exits 125 without running any of it.
func assertRunsNothing(t *testing.T, s *shell, part []byte) {
	t.Helper()
	_, err := s.ctl.Write(part)
	require.NoError(t, err)
	require.NoError(t, s.ctl.Close())
	out, err := io.ReadAll(s.stdout)
	require.NoError(t, err)
	assert.Empty(t, string(out))
	_ = s.wait()
	assert.Equal(t, 125, s.status.ExitStatus())
	_ = s.stderr.Close()
	_ = s.stdout.Close()
}

func TestCwdEnvStdin(t *testing.T) {
	p := newPool(t, Options{Workers: 1, Env: []string{"PATH=/usr/bin:/bin", "KEEP=1", "OVER=old"}})
	dir := t.TempDir()
	out := run(t, p, tool.BashArgs{Command: `pwd; echo "$KEEP $OVER $NEW"`, Cwd: dir, Env: map[string]string{"OVER": "new", "NEW": "x"}})
	assert.Equal(t, dir+"\n1 new x\n", out.Stdout)

	out = run(t, p, tool.BashArgs{Command: "tr a-z A-Z", Stdin: "hello\n"})
	assert.Equal(t, "HELLO\n", out.Stdout)

	out = run(t, p, tool.BashArgs{Command: "cat; echo end"})
	assert.Equal(t, "end\n", out.Stdout, "stdin is empty by default")

	_, err := p.Run(context.Background(), nil, tool.BashArgs{Command: "true", Cwd: filepath.Join(dir, "missing")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cwd "+filepath.Join(dir, "missing"))
}

func TestTimeoutKillsProcessGroup(t *testing.T) { inBothModes(t, testTimeoutKillsProcessGroup) }

func testTimeoutKillsProcessGroup(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 1, ForkServer: mode})
	marker := filepath.Join(t.TempDir(), "pid")
	out := run(t, p, tool.BashArgs{Command: "sleep 300 & echo $! > " + marker + "; wait", Timeout: 0.3})
	assert.Equal(t, -1, out.ExitCode)
	assert.Equal(t, "timeout", out.Stderr)
	b, err := os.ReadFile(marker)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	// Dead by the time the call is answered (a zombie only where nothing
	// reaps orphans: the test's environment; boxsh-init reaps in a sandbox).
	assert.True(t, syscall.Kill(pid, 0) == syscall.ESRCH || zombie(pid), "background child %d outlived the answer", pid)

	out = run(t, p, tool.BashArgs{Command: "echo next"})
	assert.Equal(t, "next\n", out.Stdout, "the worker serves the next call")
}

// zombie reports whether pid is a zombie (killed, not yet reaped by init).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

func TestCancelKillsCommand(t *testing.T) { inBothModes(t, testCancelKillsCommand) }

func testCancelKillsCommand(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 1, ForkServer: mode})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx, nil, tool.BashArgs{Command: "sleep 300"})
		done <- err
	}()
	require.Eventually(t, func() bool { return p.runningCount() == 1 }, 10*time.Second, time.Millisecond, "the command runs")
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not stop the command")
	}
}

func TestBackgroundProcessDoesNotHoldAnswer(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	start := time.Now()
	out := run(t, p, tool.BashArgs{Command: "sleep 5 & echo started"})
	assert.Equal(t, "started\n", out.Stdout)
	assert.Less(t, time.Since(start), 4*time.Second, "the answer waited for a background process")
}

func TestOutputCap(t *testing.T) {
	p := newPool(t, Options{Workers: 1, MaxStream: 1000})
	out := run(t, p, tool.BashArgs{Command: "head -c 5000 /dev/zero | tr '\\0' a; echo e >&2"})
	assert.Len(t, out.Stdout, 1000)
	assert.True(t, out.StdoutTruncated)
	assert.False(t, out.StderrTruncated)
	assert.Equal(t, 0, out.ExitCode, "the command is not killed by the cap")
}

func TestQueueIsFIFOAndBounded(t *testing.T) {
	p := newPool(t, Options{Workers: 2})
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	var wg sync.WaitGroup
	tickets := make([]*Ticket, 6)
	for i := range tickets {
		tickets[i] = p.Reserve()
	}
	// Run the calls from goroutines started in reverse order: the start
	// order must still follow the order of the tickets.
	for i := len(tickets) - 1; i >= 0; i-- {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := fmt.Sprintf("echo start %d >> %s; sleep 0.2; echo end %d >> %s", i, log, i, log)
			_, err := p.Run(context.Background(), tickets[i], tool.BashArgs{Command: cmd})
			assert.NoError(t, err)
		}(i)
	}
	wg.Wait()
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	running, maxRunning := 0, 0
	var starts []int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if f[0] == "start" {
			running++
			n, _ := strconv.Atoi(f[1])
			starts = append(starts, n)
		} else {
			running--
		}
		maxRunning = max(maxRunning, running)
	}
	assert.Equal(t, 2, maxRunning, "at most --workers commands run at once")
	require.Len(t, starts, 6)
	// Two workers: tickets 0,1 start first (in either order), then 2,3,
	// then 4,5.
	for k := 0; k < 6; k += 2 {
		assert.ElementsMatch(t, []int{k, k + 1}, starts[k:k+2], "start order %v", starts)
	}
}

func TestCloseKillsRunningCommands(t *testing.T) { inBothModes(t, testCloseKillsRunningCommands) }

func testCloseKillsRunningCommands(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 1, ForkServer: mode})
	// The command says it runs: on a loaded machine its shell may take
	// longer to start than any fixed wait.
	marker := filepath.Join(t.TempDir(), "running")
	type result struct {
		out tool.BashOutput
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := p.Run(context.Background(), nil, tool.BashArgs{Command: "touch " + marker + "; sleep 300"})
		done <- result{out, err}
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(marker); return err == nil }, 5*time.Second, 5*time.Millisecond, "the command did not start")
	p.Close()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		assert.Equal(t, 137, r.out.ExitCode)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not kill the running command")
	}
	_, err := p.Run(context.Background(), nil, tool.BashArgs{Command: "true"})
	assert.Error(t, err, "a closed pool refuses calls")
}

func TestCloseKillsBackgroundProcesses(t *testing.T) {
	inBothModes(t, testCloseKillsBackgroundProcesses)
}

func testCloseKillsBackgroundProcesses(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 1, ForkServer: mode})
	marker := filepath.Join(t.TempDir(), "pid")
	out, err := p.Run(context.Background(), nil, tool.BashArgs{Command: "sleep 300 >/dev/null 2>&1 & echo $! > " + marker})
	require.NoError(t, err)
	require.Equal(t, 0, out.ExitCode)
	b, err := os.ReadFile(marker)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, 0), "the background process runs after its call")
	p.Close()
	assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH || zombie(pid) },
		5*time.Second, 20*time.Millisecond, "background process %d survived Close", pid)
}

// Calls that come together each get a fresh shell, and once they are
// over idleShells warm shells wait for the next calls, not one per
// worker: idle shells hold memory.
func TestOneWarmShellWhileIdle(t *testing.T) { inBothModes(t, testOneWarmShellWhileIdle) }

func testOneWarmShellWhileIdle(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 3, ForkServer: mode})

	// Three calls at once, more than the one shell waiting.
	var wg sync.WaitGroup
	outs := make([]tool.BashOutput, 3)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = run(t, p, tool.BashArgs{Command: `echo "$0:$#:$$"; sleep 0.2`})
		}()
	}
	wg.Wait()
	pids := map[string]bool{}
	for _, out := range outs {
		assert.Regexp(t, `^/bin/sh:0:[0-9]+\n$`, out.Stdout)
		pids[out.Stdout] = true
	}
	assert.Len(t, pids, 3, "each call has a shell of its own")

	// idleShells are left waiting (with a zygote; without, placeholders
	// that make calls start their shells by exec).
	// With no refill in flight, none comes: nothing runs that would start one.
	require.Eventually(t, func() bool { return len(p.shells) == idleShells && p.refillsIdle() }, 10*time.Second, 5*time.Millisecond)
	require.Len(t, p.shells, idleShells)
	for range idleShells {
		s := <-p.shells
		if mode == execMode {
			assert.Error(t, s.err)
		} else {
			assert.NoError(t, s.err)
		}
		defer func() { p.shells <- s }()
	}
}

// refillsIdle tells whether no warm shell is being started.
// runningCount is how many commands of p run.
func (p *Pool) runningCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.running)
}

func (p *Pool) refillsIdle() bool {
	done := make(chan struct{})
	go func() { p.refills.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(time.Millisecond):
		return false
	}
}

// Closing a pool whose other workers were never warmed does not wait for
// them.
func TestCloseBeforeWarmUp(t *testing.T) { inBothModes(t, testCloseBeforeWarmUp) }

func testCloseBeforeWarmUp(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 4, ForkServer: mode})
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on a worker that was never warmed")
	}
}

// A call that comes before the fork server has started runs at once, in a
// shell started by exec, and the calls after it in the fork server's.
func TestCallBeforeWarmUp(t *testing.T) {
	requireForkServer(t)
	p, err := NewPool(Options{ForkServer: forkServer, Workers: 2})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	out, err := p.Run(context.Background(), nil, tool.BashArgs{Command: "echo early"})
	require.NoError(t, err)
	assert.Equal(t, "early\n", out.Stdout)
	<-p.warmedUp
	require.NotNil(t, p.zygote.Load(), "the pool runs a zygote")
	for range 3 {
		out, err := p.Run(context.Background(), nil, tool.BashArgs{Command: "echo later"})
		require.NoError(t, err)
		assert.Equal(t, "later\n", out.Stdout)
	}
}

// A call that starts while others wait for a worker (a burst) has the
// warm shell it took replaced at once, not once it is answered: the next
// call finds one ready.
func TestBurstRefillsAtOnce(t *testing.T) { inBothModes(t, testBurstRefillsAtOnce) }

func testBurstRefillsAtOnce(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 1, ForkServer: mode})
	run(t, p, tool.BashArgs{Command: "true"})
	require.Eventually(t, func() bool { return len(p.shells) == idleShells && p.refillsIdle() }, 10*time.Second, 5*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tickets := []*Ticket{p.Reserve(), p.Reserve(), p.Reserve()}
	commands := []string{"true", "sleep 3", "true"}
	done := make(chan error, len(tickets))
	for i, tk := range tickets {
		go func() {
			_, err := p.Run(ctx, tk, tool.BashArgs{Command: commands[i]})
			done <- err
		}()
	}
	require.NoError(t, <-done, "the first call")
	// The second call sleeps with the third waiting behind it: the shell it
	// took is replaced meanwhile.
	assert.Eventually(t, func() bool { return len(p.shells) == idleShells && p.refillsIdle() }, 2*time.Second, 5*time.Millisecond,
		"the shells waiting while the second call runs")
	p.mu.Lock()
	assert.Len(t, p.queue, 1, "the third call still waits")
	p.mu.Unlock()
	require.NoError(t, <-done)
	require.NoError(t, <-done)
}

// Every call's output is its own and complete, however soon after the
// shell's exit the pool stops waiting for more: what the shell wrote
// before it exited is in the pipes. Unique outputs tell lost output from
// output given to another call.
func TestOutputCompleteWithoutGrace(t *testing.T) { inBothModes(t, testOutputCompleteWithoutGrace) }

func testOutputCompleteWithoutGrace(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 4, ForkServer: mode})
	p.drainGrace = 0
	const callers, calls = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, callers*calls)
	for c := range callers {
		wg.Go(func() {
			for i := range calls {
				id := strconv.Itoa(c*calls + i)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				out, err := p.Run(ctx, nil, tool.BashArgs{Command: "echo " + id + "; echo e" + id + " >&2"})
				cancel()
				switch {
				case err != nil:
					errs <- fmt.Errorf("call %s: %v", id, err)
				case out.ExitCode != 0 || out.Stdout != id+"\n" || out.Stderr != "e"+id+"\n":
					errs <- fmt.Errorf("call %s: exit %d, stdout %q, stderr %q", id, out.ExitCode, out.Stdout, out.Stderr)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var failed []string
	for err := range errs {
		failed = append(failed, err.Error())
	}
	assert.Empty(t, failed, "%d of %d calls", len(failed), callers*calls)
}
