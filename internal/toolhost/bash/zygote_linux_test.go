package bash

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/reap"
)

// clonedProbe prints whether the shell that runs it was cloned from a
// zygote (it has the library mapped) or started by exec.
const clonedProbe = `grep -q boxsh-zygote /proc/$$/maps && echo cloned || echo exec`

// A cloned shell is a process of its own, boxsh-init's child, the leader of
// its own process group, without the zygote's variables.
func TestZygoteShellIsFresh(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	out := run(t, p, tool.BashArgs{Command: `echo $$ $PPID; sh -c 'echo $PPID'; cut -d' ' -f5 /proc/$$/stat; ` + clonedProbe +
		`; env | grep -c -e ^LD_PRELOAD= -e ^BOXSH_ZYGOTE_ -e ^LD_BIND_NOW=`})
	lines := strings.Fields(out.Stdout)
	require.Len(t, lines, 6, out.Stdout+out.Stderr)
	assert.Equal(t, lines[0], lines[2], "$$ is the shell's own PID")
	assert.Equal(t, strconv.Itoa(os.Getpid()), lines[1], "the shell is the pool's child")
	assert.Equal(t, lines[0], lines[3], "the shell leads its own process group")
	assert.Equal(t, "cloned", lines[4], "the shell was cloned from the zygote")
	assert.Equal(t, "0", lines[5], "no LD_PRELOAD, LD_BIND_NOW or zygote variable reaches commands")
}

// Many calls at once each get a shell of their own from the one zygote.
func TestZygoteParallelCalls(t *testing.T) {
	p := newPool(t, Options{Workers: 4})
	const calls = 64
	pids := make([]string, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := run(t, p, tool.BashArgs{Command: "echo $$; exit " + strconv.Itoa(i%7)})
			assert.Equal(t, i%7, out.ExitCode)
			pids[i] = out.Stdout
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, pid := range pids {
		assert.False(t, seen[pid], "PID %s served two calls", pid)
		seen[pid] = true
	}
}

// With a reaper taking every other child's status (boxsh-init as PID 1),
// the exit status of cloned shells still reaches their calls.
func TestZygoteWithReaper(t *testing.T) {
	r := reap.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	p := newPool(t, Options{Workers: 2, Reaper: r})
	for i := range 40 {
		out := run(t, p, tool.BashArgs{Command: "sleep 0.001 & exit " + strconv.Itoa(i%5)})
		assert.Equal(t, i%5, out.ExitCode)
	}
}

// A zygote killed by a command is replaced; meanwhile shells start by exec
// and no call fails.
func TestZygoteKilled(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	z := p.zygote.Load()
	out := run(t, p, tool.BashArgs{Command: "kill -9 " + strconv.Itoa(z.cmd.Process.Pid)})
	assert.Equal(t, 0, out.ExitCode, out.Stderr)
	for range 5 {
		out = run(t, p, tool.BashArgs{Command: "echo ok"})
		assert.Equal(t, "ok\n", out.Stdout)
	}
	require.Eventually(t, func() bool {
		n := p.zygote.Load()
		return n != nil && n != z
	}, 10*time.Second, 10*time.Millisecond, "a new zygote is started")
	assert.False(t, memOpens(t, p.zygote.Load().cmd.Process.Pid), "the new zygote's memory opens")
	for range idleShells { // take the shells made while there was no zygote
		run(t, p, tool.BashArgs{Command: "true"})
	}
	out = run(t, p, tool.BashArgs{Command: clonedProbe})
	assert.Equal(t, "cloned\n", out.Stdout, "shells are cloned again")
}

// A shell that does not load the library (here: the library is not one)
// exits at once instead of serving; the pool then starts shells by exec.
func TestZygoteNotServing(t *testing.T) {
	bogus := filepath.Join(t.TempDir(), "boxsh-zygote.so")
	require.NoError(t, os.WriteFile(bogus, []byte("not a library"), 0o644))
	devNull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devNull.Close()
	_, err = startZygote(bogus, "/bin/sh", proc.Limits{}, os.Environ(), "", devNull, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, io.EOF, "the shell exited rather than waiting for the timeout")
	assert.Contains(t, err.Error(), "/bin/sh does not serve as a zygote")

	p, err := NewPool(Options{Workers: 1, ForkServer: bogus})
	require.NoError(t, err)
	defer p.Close()
	assert.Nil(t, p.zygote.Load())
	out := run(t, p, tool.BashArgs{Command: "echo ok; " + clonedProbe})
	assert.Equal(t, "ok\nexec\n", out.Stdout)
}

// An environment with its own LD_PRELOAD keeps it: shells start by exec.
func TestZygoteLeavesOwnPreload(t *testing.T) {
	requireForkServer(t)
	p, err := NewPool(Options{Workers: 1, ForkServer: forkServer, Env: []string{"PATH=/usr/bin:/bin", "LD_PRELOAD="}})
	require.NoError(t, err)
	defer p.Close()
	assert.Nil(t, p.zygote.Load())
	out := run(t, p, tool.BashArgs{Command: `echo "${LD_PRELOAD-unset}"`})
	assert.Equal(t, "\n", out.Stdout)
}

// An environment that sets LD_BIND_NOW itself keeps it in its cloned
// shells (the zygote removes only the one the pool set), with any value.
func TestZygoteLeavesOwnBindNow(t *testing.T) {
	for _, v := range []string{"", "1"} {
		p := newPool(t, Options{Workers: 1, Env: []string{"PATH=/usr/bin:/bin", "LD_BIND_NOW=" + v}})
		out := run(t, p, tool.BashArgs{Command: `echo "${LD_BIND_NOW-unset}" "${BOXSH_ZYGOTE_BIND_NOW-unset}"; ` + clonedProbe})
		assert.Equal(t, v+" unset\ncloned\n", out.Stdout, out.Stderr)
	}
}

// An inherited BOXSH_ZYGOTE_FD does not stop warm shells.
func TestInheritedZygoteVariable(t *testing.T) {
	p := newPool(t, Options{Workers: 1, ForkServer: execMode, Env: []string{"PATH=/usr/bin:/bin", "BOXSH_ZYGOTE_FD=7"}})
	out := run(t, p, tool.BashArgs{Command: `echo "${BOXSH_ZYGOTE_FD-unset}"`})
	assert.Equal(t, "unset\n", out.Stdout)
	assert.Equal(t, 0, out.ExitCode)
}

// bash, which brings its own getenv and unsetenv, is cloned as well, and
// its commands see no trace of the zygote either.
func TestZygoteWithBash(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash on this machine")
	}
	p := newPool(t, Options{Workers: 1, Shell: "/bin/bash"})
	for range 2 {
		out := run(t, p, tool.BashArgs{Command: `echo "$0 ${BASH_VERSION:+bash} ${BOXSH_ZYGOTE_FD-unset} ${LD_PRELOAD-unset}"; ` + clonedProbe})
		assert.Equal(t, "/bin/bash bash unset unset\ncloned\n", out.Stdout, out.Stderr)
	}
}

// A shell named without its directory is found on PATH, and keeps its
// name as $0, as a shell started by exec does.
func TestZygoteShellOnPath(t *testing.T) {
	p := newPool(t, Options{Workers: 1, Shell: "sh"})
	out := run(t, p, tool.BashArgs{Command: `echo "$0"; cat /proc/$$/comm; ` + clonedProbe})
	assert.Equal(t, "sh\nsh\ncloned\n", out.Stdout, out.Stderr)
}

// A cloned shell runs its command as `sh -c COMMAND`, whatever its length
// (beyond what exec allows one argument), and ps shows its beginning.
func TestZygoteCommandAsArgument(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	out := run(t, p, tool.BashArgs{Command: `printf '%s|' "$0" "$#"; tr '\0' ' ' </proc/$$/cmdline`})
	assert.Equal(t, "/bin/sh|0|/bin/sh -c printf '%s|' \"$0\" \"$#\"; tr '\\0' ' ' </proc/$$/cmdline", strings.TrimRight(out.Stdout, " "),
		"the command's arguments, then the placeholder's NUL padding")
	out = run(t, p, tool.BashArgs{Command: `cat /proc/$$/comm`})
	assert.Equal(t, "sh\n", out.Stdout, "ps shows the shell's name, as for sh started by exec")

	long := strings.Repeat("y", 300<<10)
	out = run(t, p, tool.BashArgs{Command: "echo " + long + "; " + clonedProbe})
	assert.Equal(t, long+"\ncloned\n", out.Stdout)
}

// A cloned shell whose command does not arrive whole runs nothing.
func TestZygoteTruncatedCommandRunsNothing(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	s := p.startShell(nil)
	require.NoError(t, s.err)
	assertRunsNothing(t, s, []byte{100, 0, 0, 0, 'e', 'c', 'h', 'o', ' ', 'x', '\n'})
}

// A zygote that does not answer in time is given up, and the call runs on
// a shell started by exec on fresh pipes, whole.
func TestZygoteStopped(t *testing.T) {
	defer func(d time.Duration) { zygoteTimeout = d }(zygoteTimeout)
	zygoteTimeout = 200 * time.Millisecond
	p := newPool(t, Options{Workers: 1})
	z := p.zygote.Load()
	require.NoError(t, z.cmd.Process.Signal(syscall.SIGSTOP))
	run(t, p, tool.BashArgs{Command: "true"}) // its replacement is asked of the stopped zygote
	out := run(t, p, tool.BashArgs{Command: "echo hello world; echo second line; " + clonedProbe})
	assert.Equal(t, "hello world\nsecond line\nexec\n", out.Stdout, out.Stderr)
	assert.Eventually(t, func() bool { n := p.zygote.Load(); return n != nil && n != z },
		10*time.Second, 10*time.Millisecond, "a new zygote is started")
}

// A clone the zygote could not make (a process limit reached) falls back
// to exec for that shell and keeps the zygote.
func TestZygoteCloneRefused(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	real := p.zygote.Load()

	// A stand-in zygote that refuses every clone with EAGAIN.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	ours := os.NewFile(uintptr(fds[0]), "fake")
	theirs := os.NewFile(uintptr(fds[1]), "fake")
	defer theirs.Close()
	c, err := net.FileConn(ours)
	require.NoError(t, err)
	_ = ours.Close()
	sleeper := exec.Command("sleep", "60")
	require.NoError(t, sleeper.Start())
	fake := &zygote{cmd: sleeper, conn: c.(*net.UnixConn)}
	tfd := int(theirs.Fd())
	go func() {
		buf, oob := make([]byte, 1), make([]byte, 128)
		for {
			_, oobn, _, _, err := unix.Recvmsg(tfd, buf, oob, 0)
			if err != nil {
				return
			}
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					if fds, err := unix.ParseUnixRights(&m); err == nil {
						for _, fd := range fds {
							_ = unix.Close(fd)
						}
					}
				}
			}
			_, _ = theirs.Write(binary.NativeEndian.AppendUint32(nil, eagainAnswer))
		}
	}()
	p.zygote.Store(fake)
	defer fake.close()
	defer p.zygote.Store(real)

	var refused *cloneError
	require.ErrorAs(t, p.startShell(nil).err, &refused)
	assert.Same(t, fake, p.zygote.Load(), "the zygote is kept")
}

// A long command to a cloned shell that is not reading its pipe (stopped)
// still times out.
func TestZygoteLongCommandToStoppedShell(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	run(t, p, tool.BashArgs{Command: "true"})
	// Stop the shell the next call takes: the first waiting.
	require.Eventually(t, func() bool { return len(p.shells) == idleShells && p.refillsIdle() }, 5*time.Second, 5*time.Millisecond)
	var waiting []*shell
	for range idleShells {
		waiting = append(waiting, <-p.shells)
	}
	pid := waiting[0].proc.pid
	for _, s := range waiting {
		p.shells <- s
	}
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	done := make(chan tool.BashOutput, 1)
	go func() {
		done <- run(t, p, tool.BashArgs{Command: "echo " + strings.Repeat("y", 200<<10), Timeout: 0.3})
	}()
	select {
	case out := <-done:
		assert.Equal(t, -1, out.ExitCode)
		assert.Equal(t, "timeout", out.Stderr)
	case <-time.After(10 * time.Second):
		t.Fatal("the call hung on writing its command")
	}
	out := run(t, p, tool.BashArgs{Command: "echo next"})
	assert.Equal(t, "next\n", out.Stdout)
}

// eagainAnswer is the zygote's answer -EAGAIN, as the 32 bits it sends.
var eagainAnswer = func() uint32 { v := -int32(syscall.EAGAIN); return uint32(v) }()

// memOpens tells whether a process of the test's user without
// CAP_SYS_PTRACE (as a command is) can open process pid's memory for
// reading and writing. (Run as root, a refusal proves less: the kernel
// also refuses a process with fewer capabilities than its target. The
// tests are meant to run as an ordinary user.)
func memOpens(t *testing.T, pid int) bool {
	t.Helper()
	argv := []string{"sh", "-c", "exec 5<>/proc/" + strconv.Itoa(pid) + "/mem"}
	if os.Geteuid() == 0 {
		// Root opens any process's memory with CAP_SYS_PTRACE: the probe
		// runs without it.
		argv = append([]string{"setpriv", "--bounding-set", "-sys_ptrace"}, argv...)
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
	}
	return err == nil
}

// No command can open the memory of a process the pool keeps waiting (the
// zygote, a warm shell): code planted there would run in later calls.
// Once a warm shell has its command it is open to that command, as any
// process of the user's is.
func TestWaitingProcessesNotDumpable(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	s := <-p.shells
	require.NoError(t, s.err)
	assert.False(t, memOpens(t, p.zygote.Load().cmd.Process.Pid), "the zygote's memory opens")
	assert.False(t, memOpens(t, s.proc.pid), "a warm shell's memory opens")
	p.shells <- s

	// (As root, the control runs with the probe's capabilities: the
	// kernel lets none open the memory of a process with more.)
	sleep := []string{"sleep", "60"}
	if os.Geteuid() == 0 {
		sleep = append([]string{"setpriv", "--bounding-set", "-sys_ptrace"}, sleep...)
	}
	sleeper := exec.Command(sleep[0], sleep[1:]...)
	require.NoError(t, sleeper.Start())
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	require.Eventually(t, func() bool { return memOpens(t, sleeper.Process.Pid) }, 5*time.Second, 10*time.Millisecond,
		"the probe opens a process's memory")

	out := run(t, p, tool.BashArgs{Command: `(exec 5<>/proc/$$/mem) && echo own-mem; ls /proc/$$/fd >/dev/null && echo own-fd; ` + clonedProbe})
	assert.Equal(t, "own-mem\nown-fd\ncloned\n", out.Stdout, out.Stderr)
}

// The pool's limits bind the zygote's clones (set on the zygote after its
// start, not by starting it through the limits executable).
func TestZygoteLimits(t *testing.T) {
	p := newPool(t, Options{Workers: 1, Limits: proc.Limits{Data: 1 << 30, Procs: 5000}})
	out := run(t, p, tool.BashArgs{Command: `ulimit -d; ulimit -H -d; ulimit -u 2>/dev/null || ulimit -p; ` + clonedProbe})
	assert.Equal(t, "1048576\n1048576\n5000\ncloned\n", out.Stdout, out.Stderr)
}

// The zygote is not dumpable from its exec on, before the library runs.
//
// A process started from an execute-only copy of its program cannot have its
// memory opened. The program here is tail -F, which keeps waiting for a file
// that does not exist.
func TestExecOnlyCopyNotDumpable(t *testing.T) {
	tail, err := exec.LookPath("tail")
	if err != nil {
		t.Skip("no tail on this machine")
	}
	exe, err := execOnlyCopy(tail)
	require.NoError(t, err)
	defer exe.Close()
	missing := filepath.Join(t.TempDir(), "missing")
	cmd := &exec.Cmd{Path: "/proc/self/fd/3", Args: []string{"tail", "-F", missing}, ExtraFiles: []*os.File{exe}}
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Start returns once the copy is executed; then tail, loaded, waits
	// for its file (asleep), or has died.
	var state []byte
	require.Eventually(t, func() bool {
		state, err = os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
		return err == nil && (strings.Contains(string(state), ") S ") || strings.Contains(string(state), ") Z "))
	}, 10*time.Second, time.Millisecond, "tail waits or has died")
	assert.NotContains(t, string(state), ") Z ", "the copy's process still runs")
	assert.False(t, memOpens(t, cmd.Process.Pid), "the copy's process is dumpable")
}

// The copy of the shell that the zygote and every clone run cannot be
// changed by a command (its own shell's /proc/$$/exe is that copy): code
// written there would run in later calls.
func TestZygoteCopyCannotBeChanged(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	out := run(t, p, tool.BashArgs{Command: `readlink /proc/$$/exe; chmod 0777 /proc/$$/exe; printf x >>/proc/$$/exe && echo appended; printf x 1<>/proc/$$/exe && echo overwritten; : >/proc/$$/exe && echo truncated`})
	assert.Contains(t, out.Stdout, "memfd:boxsh-zygote", out.Stderr)
	assert.NotContains(t, out.Stdout, "appended")
	assert.NotContains(t, out.Stdout, "overwritten")
	assert.NotContains(t, out.Stdout, "truncated")
	out = run(t, p, tool.BashArgs{Command: "echo still; " + clonedProbe})
	assert.Equal(t, "still\ncloned\n", out.Stdout, out.Stderr)
}

// Warm shells asked for while the zygote is busy are made together, in one
// exchange (all the requests, then all the answers), and each runs its
// command.
func TestZygoteBatchesRefills(t *testing.T) {
	p := newPool(t, Options{Workers: 4})
	require.Eventually(t, func() bool { return p.refillsIdle() }, 5*time.Second, 5*time.Millisecond)
	z := p.zygote.Load()
	var taken []*shell
	for len(p.shells) > 0 {
		taken = append(taken, <-p.shells)
	}
	before := z.exchanges.Load()

	// The first refill's exchange waits for the zygote; three more are
	// asked for meanwhile.
	z.mu.Lock()
	p.refill()
	require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.wanted == 0 }, 5*time.Second, time.Millisecond,
		"the refiller took the first request")
	for range 3 {
		p.refill()
	}
	z.mu.Unlock()
	require.Eventually(t, func() bool { return len(p.shells) == 4 && p.refillsIdle() }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, int64(2), z.exchanges.Load()-before, "one exchange for the first shell, one for the three asked for meanwhile")

	for len(p.shells) > 0 {
		taken = append(taken, <-p.shells)
	}
	for _, s := range taken[len(taken)-4:] {
		out, err := p.runOn(context.Background(), s, tool.BashArgs{Command: "echo $$"})
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(s.proc.pid)+"\n", out.Stdout)
	}
	for _, s := range taken[:len(taken)-4] {
		s.discard()
	}
}
