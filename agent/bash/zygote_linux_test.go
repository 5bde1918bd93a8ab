package bash

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/agent/reap"
	"github.com/boxsh/boxsh/tool"
)

// clonedProbe prints whether the shell that runs it was cloned from a
// zygote (it has the library mapped) or started by exec.
const clonedProbe = `grep -q boxsh-zygote /proc/$$/maps && echo cloned || echo exec`

// A cloned shell is a process of its own, boxsh-init's child, the leader of
// its own process group, without the zygote's variables.
func TestZygoteShellIsFresh(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	out := run(t, p, tool.BashArgs{Command: `echo $$ $PPID; sh -c 'echo $PPID'; cut -d' ' -f5 /proc/$$/stat; ` + clonedProbe +
		`; env | grep -c -e ^LD_PRELOAD= -e ^BOXSH_ZYGOTE_FD=`})
	lines := strings.Fields(out.Stdout)
	require.Len(t, lines, 6, out.Stdout+out.Stderr)
	assert.Equal(t, lines[0], lines[2], "$$ is the shell's own PID")
	assert.Equal(t, strconv.Itoa(os.Getpid()), lines[1], "the shell is the pool's child")
	assert.Equal(t, lines[0], lines[3], "the shell leads its own process group")
	assert.Equal(t, "cloned", lines[4], "the shell was cloned from the zygote")
	assert.Equal(t, "0", lines[5], "no LD_PRELOAD or zygote socket reaches commands")
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
	run(t, p, tool.BashArgs{Command: "true"}) // takes the last shell made by exec
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
	_, err = startZygote(bogus, []string{"/bin/sh", "-c", zygoteScript}, os.Environ(), "", devNull, nil)
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

// A cloned shell runs its command as `sh -c COMMAND`, whatever its length
// (beyond what exec allows one argument), and ps shows its beginning.
func TestZygoteCommandAsArgument(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	out := run(t, p, tool.BashArgs{Command: `printf '%s|' "$0" "$#"; tr '\0' ' ' </proc/$$/cmdline`})
	assert.Equal(t, "/bin/sh|0|/bin/sh -c printf '%s|' \"$0\" \"$#\"; tr '\\0' ' ' </proc/$$/cmdline", strings.TrimRight(out.Stdout, " "),
		"the command's arguments, then the placeholder's NUL padding")

	long := strings.Repeat("y", 300<<10)
	out = run(t, p, tool.BashArgs{Command: "echo " + long + "; " + clonedProbe})
	assert.Equal(t, long+"\ncloned\n", out.Stdout)
}

// A cloned shell whose command does not arrive whole runs nothing.
func TestZygoteTruncatedCommandRunsNothing(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	s := p.startShell(nil)
	require.NoError(t, s.err)
	require.True(t, s.cloned)
	_, err := s.ctl.Write([]byte{100, 0, 0, 0, 'e', 'c', 'h', 'o', ' ', 'x', '\n'})
	require.NoError(t, err)
	require.NoError(t, s.ctl.Close())
	out, err := io.ReadAll(s.stdout)
	require.NoError(t, err)
	assert.Empty(t, string(out))
	_ = s.wait()
	assert.Equal(t, 125, s.state.ExitCode())
	_ = s.stderr.Close()
	_ = s.stdout.Close()
}
