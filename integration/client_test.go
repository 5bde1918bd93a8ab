package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
)

// startClient starts a client on the boxsh under test, closed at the end
// of the test.
func startClient(t *testing.T, opts client.Options) *client.Client {
	t.Helper()
	opts.Binary = boxshPath()
	c, err := client.Start(testContext(t), opts)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestClientTools checks the client's file and command calls, without and
// with a sandbox.
func TestClientTools(t *testing.T) {
	t.Parallel()
	for _, sandboxed := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "sandbox"}[sandboxed], func(t *testing.T) {
			if sandboxed {
				requireRootless(t)
				require.NoError(t, client.Supported())
			}
			dir := t.TempDir()
			opts := client.Options{Dir: dir}
			if sandboxed {
				opts.Sandbox = true
				opts.Binds = []client.Bind{{Mode: client.ReadWrite, Src: dir}}
			}
			c := startClient(t, opts)
			ctx := testContext(t)
			r, err := c.Exec(ctx, client.ExecRequest{Command: "echo $(pwd) >&2; echo hi > made; id -u"})
			require.NoError(t, err)
			require.Equal(t, dir+"\n", r.Stderr)
			if sandboxed {
				require.Equal(t, "0\n", r.Stdout, "root inside the sandbox")
			}
			r, err = c.Exec(ctx, client.ExecRequest{Args: []string{"cat", "made"}})
			require.NoError(t, err)
			require.Equal(t, "hi\n", r.Stdout)

			p := filepath.Join(dir, "f.txt")
			require.NoError(t, c.WriteString(ctx, p, "alpha\nbeta\n"))
			_, err = c.Edit(ctx, p, client.Edit{OldText: "beta", NewText: "gamma"})
			require.NoError(t, err)
			got, err := c.ReadFile(ctx, p)
			require.NoError(t, err)
			require.Equal(t, "alpha\ngamma\n", got)
			l, err := c.List(ctx, client.ListRequest{Path: dir})
			require.NoError(t, err)
			var names []string
			for _, e := range l.Entries {
				names = append(names, e.Name)
			}
			require.Subset(t, names, []string{"f.txt", "made"})
			st, err := c.Stat(ctx, p)
			require.NoError(t, err)
			require.True(t, st.Exists)
			require.Equal(t, int64(12), *st.Size)

			_, err = c.Read(ctx, client.ReadRequest{Path: filepath.Join(dir, "missing")})
			var te *client.ToolError
			require.ErrorAs(t, err, &te)
		})
	}
}

// processesWith lists the PIDs whose command line contains marker.
func processesWith(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestClientSandboxCrash kills a sandboxed server with SIGKILL. The pending
// call returns ServerGoneError, the sandbox's processes die, and a new
// server starts.
func TestClientSandboxCrash(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	dir := t.TempDir()
	opts := client.Options{Dir: dir, Sandbox: true, Binds: []client.Bind{{Mode: client.ReadOnly, Src: dir}}}
	c := startClient(t, opts)
	marker := fmt.Sprintf("36%d.5", time.Now().UnixNano()%1000000)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Run(testContext(t), "sleep "+marker)
		errc <- err
	}()
	require.Eventually(t, func() bool { return len(processesWith(marker)) > 0 }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, syscall.Kill(c.Pid(), syscall.SIGKILL))
	select {
	case err := <-errc:
		var gone *client.ServerGoneError
		require.ErrorAs(t, err, &gone)
	case <-time.After(10 * time.Second):
		t.Fatal("the pending call did not return")
	}
	require.Eventually(t, func() bool { return len(processesWith(marker)) == 0 }, 10*time.Second, 50*time.Millisecond, "the sandbox's processes die with the server")

	c2 := startClient(t, opts)
	r, err := c2.Run(testContext(t), "echo back")
	require.NoError(t, err)
	require.Equal(t, "back\n", r.Stdout)
}

// TestClientSandboxCancel checks that cancelling a sandboxed call returns
// at once and kills its command.
func TestClientSandboxCancel(t *testing.T) {
	requireRootless(t)
	dir := t.TempDir()
	c := startClient(t, client.Options{Dir: dir, Sandbox: true})
	marker := fmt.Sprintf("37%d.5", time.Now().UnixNano()%1000000)
	ctx, cancel := context.WithCancel(testContext(t))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, "sleep "+marker)
		errc <- err
	}()
	require.Eventually(t, func() bool { return len(processesWith(marker)) > 0 }, 10*time.Second, 20*time.Millisecond)
	start := time.Now()
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Less(t, time.Since(start), time.Second)
	require.Eventually(t, func() bool { return len(processesWith(marker)) == 0 }, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, c.Ping(testContext(t)))
}

// treeListing describes every path below dir: type, mode, and content or
// link target, as the same shell command prints it inside and outside the
// sandbox.
const treeListing = `find . -mindepth 1 -printf '%P %y %m %l\n' | LC_ALL=C sort; find . -type f -exec sha256sum {} + | LC_ALL=C sort -k2`

// hostListing runs treeListing in dir on the host.
func hostListing(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", treeListing)
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err)
	return string(out)
}

// changeSummary is each change as "kind path".
func changeSummary(cs []client.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Kind)+" "+c.Path)
	}
	return out
}

// TestClientSessionApply runs a session whose command makes every kind of
// change. Changes must list exactly those changes, and Apply must make SRC
// what the sandbox saw.
func TestClientSessionApply(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	src := t.TempDir()
	script := `
		mkdir -p keep/sub olddir gone/deep repl mvdir
		echo keep > keep/sub/f; echo mod > mod.txt; echo del > del.txt; echo ren > ren.txt
		echo x > olddir/x; echo d > gone/deep/d; echo r > repl/r; echo m > mvdir/m
		echo m > mode.sh; chmod 644 mode.sh; ln -s mod.txt link; echo same > same.txt`
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = src
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	s, err := client.NewSession(ctx, client.SessionOptions{Src: src, BaseDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Discard()) })
	c, err := s.Start(ctx, client.Options{Binary: boxshPath()})
	require.NoError(t, err)
	r, err := c.Run(ctx, `set -e
		pwd
		echo new > new.txt; mkdir -p newdir/inner; echo n > newdir/inner/n
		echo changed >> mod.txt
		rm del.txt; rm -r gone
		mv ren.txt renamed.txt; mv mvdir moveddir
		rm -r olddir; echo now-a-file > olddir
		rm -r repl; mkdir repl; echo fresh > repl/fresh
		chmod 755 mode.sh
		ln -sf same.txt link
		touch same.txt
		mkdir -p .devcontainer; echo '{"postCreateCommand":"evil"}' > .devcontainer/devcontainer.json
	`)
	require.NoError(t, err)
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	require.Equal(t, s.Src()+"\n", r.Stdout, "commands start in the session's view of SRC, at its own path")
	r, err = c.Run(ctx, treeListing)
	require.NoError(t, err)
	sandboxView := r.Stdout
	require.NoError(t, c.Close())

	cs, err := s.Changes()
	require.NoError(t, err)
	require.Equal(t, []string{
		"added .devcontainer", "added .devcontainer/devcontainer.json",
		"deleted del.txt", "deleted gone", "symlink_changed link", "modified mod.txt",
		"mode_changed mode.sh", "added moveddir", "added moveddir/m", "deleted mvdir",
		"added new.txt", "added newdir", "added newdir/inner", "added newdir/inner/n",
		"type_changed olddir", "deleted ren.txt", "added renamed.txt",
		"dir_replaced repl", "added repl/fresh", "deleted repl/r",
	}, changeSummary(cs))

	// The host changes a file the sandbox left alone: not a conflict.
	require.NoError(t, os.WriteFile(filepath.Join(src, "keep", "sub", "f"), []byte("host\n"), 0o644))
	res, err := s.Apply(client.ApplyOptions{})
	require.NoError(t, err)
	require.Empty(t, res.Conflicts)
	require.Empty(t, res.Failed)
	require.Len(t, res.Skipped, 2, "the protected .devcontainer and what is in it")
	require.Contains(t, res.Skipped[0].Reason, "protected")
	require.NoFileExists(t, filepath.Join(src, ".devcontainer", "devcontainer.json"))

	// SRC is now what the sandbox saw, but for the protected path and the
	// host's own edit.
	require.NoError(t, os.WriteFile(filepath.Join(src, "keep", "sub", "f"), []byte("keep\n"), 0o644))
	want := dropLines(sandboxView, ".devcontainer")
	require.Equal(t, want, hostListing(t, src))
}

// dropLines removes the lines mentioning s.
func dropLines(text, s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		if !strings.Contains(l, s) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// TestClientSessionConflict checks that a file the host edits after the
// sandbox changed it is a conflict. The host's version stays.
func TestClientSessionConflict(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "shared.txt"), []byte("v1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "other.txt"), []byte("o\n"), 0o644))
	s, err := client.NewSession(ctx, client.SessionOptions{Src: src, BaseDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Discard()) })
	c, err := s.Start(ctx, client.Options{Binary: boxshPath()})
	require.NoError(t, err)
	defer c.Close()
	r, err := c.Run(ctx, "echo sandbox > shared.txt; echo sandbox > other.txt")
	require.NoError(t, err)
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	require.NoError(t, os.WriteFile(filepath.Join(src, "shared.txt"), []byte("host\n"), 0o644))

	res, err := s.Apply(client.ApplyOptions{})
	require.NoError(t, err)
	require.Len(t, res.Conflicts, 1)
	require.Equal(t, "shared.txt", res.Conflicts[0].Change.Path)
	require.Contains(t, res.Conflicts[0].Reason, "changed in SRC")
	b, _ := os.ReadFile(filepath.Join(src, "shared.txt"))
	require.Equal(t, "host\n", string(b))
	b, _ = os.ReadFile(filepath.Join(src, "other.txt"))
	require.Equal(t, "sandbox\n", string(b))
}

// TestClientHelperProcess is the owner process TestClientSessionRecover
// kills: it acts only when BOXSH_CLIENT_HELPER names a base directory
// and a source.
func TestClientHelperProcess(t *testing.T) {
	t.Parallel()
	spec := os.Getenv("BOXSH_CLIENT_HELPER")
	if spec == "" {
		return
	}
	base, src := spec, os.Getenv("BOXSH_CLIENT_HELPER_SRC")
	ctx := context.Background()
	s, err := client.NewSession(ctx, client.SessionOptions{Src: src, BaseDir: base, Label: "helper"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	c, err := s.Start(ctx, client.Options{Binary: boxshPath()})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	r, err := c.Run(ctx, "echo recovered > result.txt; rm doomed.txt")
	if err != nil || r.ExitCode != 0 {
		fmt.Println("error", err, r)
		os.Exit(1)
	}
	fmt.Println("ready", s.Dst())
	time.Sleep(time.Minute)
	os.Exit(1)
}

// TestClientSessionRecover checks that kill -9 of a session's owner loses
// nothing. RecoverSessions finds the session and Apply applies it.
func TestClientSessionRecover(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	base, src := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "doomed.txt"), []byte("d\n"), 0o644))
	cmd := exec.Command(os.Args[0], "-test.run=^TestClientHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BOXSH_CLIENT_HELPER="+base, "BOXSH_CLIENT_HELPER_SRC="+src, "BOXSH_BIN_DIR="+binDir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "ready "), line)
	rec, err := client.RecoverSessions(base)
	require.NoError(t, err)
	require.Empty(t, rec, "its owner runs")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	rec, err = client.RecoverSessions(base)
	require.NoError(t, err)
	require.Len(t, rec, 1)
	require.Equal(t, "helper", rec[0].Info().Label)
	res, err := rec[0].Apply(client.ApplyOptions{})
	require.NoError(t, err)
	require.Len(t, res.Applied, 2)
	b, err := os.ReadFile(filepath.Join(src, "result.txt"))
	require.NoError(t, err)
	require.Equal(t, "recovered\n", string(b))
	require.NoFileExists(t, filepath.Join(src, "doomed.txt"))
	// The owner's server ends with it (its stdin closes); then the
	// session can be thrown away.
	require.Eventually(t, func() bool { return rec[0].Discard() == nil }, 10*time.Second, 100*time.Millisecond)
	require.NoDirExists(t, rec[0].Dir())
}

// TestTrySessionCommands checks that --try says at exit how many files
// changed and how to apply them. The session commands work on its DST.
func TestTrySessionCommands(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	parent := t.TempDir()
	proj := filepath.Join(parent, "proj")
	require.NoError(t, os.MkdirAll(proj, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proj, "a.txt"), []byte("a\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(proj, "old.txt"), []byte("o\n"), 0o644))
	r := runBoxshIn(t, ctx, proj, "", nil, "--try", "-c", "umask 022; echo b >> a.txt; echo n > new.txt; rm old.txt")
	require.Equal(t, 0, r.code(), r.stderr)
	m := regexp.MustCompile(`boxsh: 3 file\(s\) changed in .*\n  boxsh apply (\S+)\n`).FindStringSubmatch(r.stderr)
	require.NotNil(t, m, r.stderr)
	dst := m[1]
	require.True(t, strings.HasPrefix(dst, parent+"/.boxsh-try-"), dst)

	r = runBoxshIn(t, ctx, proj, "", nil, "changes", dst)
	require.Equal(t, 0, r.code(), r.stderr)
	require.Equal(t, "M a.txt\nA new.txt (0644)\nD old.txt\n", r.stdout)
	r = runBoxshIn(t, ctx, proj, "", nil, "diff", dst, "a.txt")
	require.Equal(t, 0, r.code(), r.stderr)
	require.Equal(t, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+b\n", r.stdout)
	r = runBoxshIn(t, ctx, proj, "", nil, "sessions")
	require.Equal(t, 0, r.code(), r.stderr)
	require.Contains(t, r.stdout, dst)
	r = runBoxshIn(t, ctx, proj, "", nil, "apply", dst, "--dry-run")
	require.Equal(t, 0, r.code(), r.stderr)
	require.Contains(t, r.stdout, "would apply A new.txt")
	require.NoFileExists(t, filepath.Join(proj, "new.txt"))
	r = runBoxshIn(t, ctx, proj, "", nil, "apply", dst)
	require.Equal(t, 0, r.code(), r.stderr)
	b, _ := os.ReadFile(filepath.Join(proj, "a.txt"))
	require.Equal(t, "a\nb\n", string(b))
	require.FileExists(t, filepath.Join(proj, "new.txt"))
	require.NoFileExists(t, filepath.Join(proj, "old.txt"))
	r = runBoxshIn(t, ctx, proj, "", nil, "discard", dst)
	require.Equal(t, 0, r.code(), r.stderr)
	require.NoDirExists(t, filepath.Dir(dst))
	r = runBoxshIn(t, ctx, proj, "", nil, "changes", filepath.Join(parent, "nothing"))
	require.Equal(t, 1, r.code())
	require.Contains(t, r.stderr, "not a boxsh session")
}

// TestClientOwnerProcess is the program TestClientServerDiesWithOwner
// kills: when BOXSH_CLIENT_OWNER is "plain" or "sandbox" it starts a
// server so, runs `sleep BOXSH_CLIENT_OWNER_SLEEP` in it and prints
// "ready SERVERPID".
func TestClientOwnerProcess(t *testing.T) {
	t.Parallel()
	mode := os.Getenv("BOXSH_CLIENT_OWNER")
	if mode == "" {
		return
	}
	ctx := context.Background()
	dir := os.Getenv("BOXSH_CLIENT_OWNER_DIR")
	opts := client.Options{Binary: boxshPath(), Dir: dir}
	if mode == "sandbox" {
		opts.Sandbox = true
		opts.Binds = []client.Bind{{Mode: client.ReadWrite, Src: dir}}
	}
	c, err := client.Start(ctx, opts)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	go func() {
		_, err := c.Run(ctx, "sleep "+os.Getenv("BOXSH_CLIENT_OWNER_SLEEP"))
		fmt.Println("error", err)
		os.Exit(1)
	}()
	fmt.Println("ready", c.Pid())
	time.Sleep(time.Minute)
	os.Exit(1)
}

// TestClientServerDiesWithOwner checks that kill -9 of the program that
// started a server kills the server and its commands, with or without a
// sandbox.
func TestClientServerDiesWithOwner(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"plain", "sandbox"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "sandbox" {
				requireRootless(t)
			}
			marker := sleepMarker(1000)
			killMarkedAtCleanup(t, marker)
			cmd := exec.Command(os.Args[0], "-test.run=^TestClientOwnerProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), "BOXSH_CLIENT_OWNER="+mode, "BOXSH_CLIENT_OWNER_DIR="+t.TempDir(),
				"BOXSH_CLIENT_OWNER_SLEEP="+marker, "BOXSH_BIN_DIR="+binDir)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(stdout).ReadString('\n')
			require.NoError(t, err)
			f := strings.Fields(line)
			require.True(t, len(f) == 2 && f[0] == "ready", line)
			server, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			t.Cleanup(func() { _ = syscall.Kill(server, syscall.SIGKILL) })
			waitForProcess(t, marker)

			require.NoError(t, cmd.Process.Kill())
			_ = cmd.Wait()
			start := time.Now()
			requireNoProcess(t, 1500*time.Millisecond, marker)
			require.Eventually(t, func() bool {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", server))
				return err != nil || len(b) == 0
			}, 1500*time.Millisecond, 10*time.Millisecond, "the server outlives its owner")
			t.Logf("gone %v after the owner", time.Since(start))
		})
	}
}

// TestClientSessionLock checks that a session is locked while a server runs
// on it. A second Start and Discard refuse it. RecoverSessions does not
// offer it, even when its owner has died. Once the server has exited, all
// three work.
func TestClientSessionLock(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	base, src := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644))
	s, err := client.NewSession(ctx, client.SessionOptions{Src: src, BaseDir: base})
	require.NoError(t, err)
	c, err := s.Start(ctx, client.Options{Binary: boxshPath()})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.True(t, s.InUse())

	_, err = s.Start(ctx, client.Options{Binary: boxshPath()})
	require.ErrorIs(t, err, client.ErrSessionInUse, "a second server")
	other, err := client.OpenSession(s.Dst())
	require.NoError(t, err)
	_, err = other.Start(ctx, client.Options{Binary: boxshPath()})
	require.ErrorIs(t, err, client.ErrSessionInUse, "a second server through another handle")
	require.ErrorIs(t, other.Discard(), client.ErrSessionInUse)
	require.DirExists(t, s.Dst())
	r, err := c.Run(ctx, "echo still > b.txt && cat a.txt")
	require.NoError(t, err)
	require.Equal(t, "a\n", r.Stdout, r.Stderr)

	// Its owner is dead (as if another program had made it), its server
	// runs: not recoverable.
	meta := filepath.Join(s.Dir(), client.MetaFile)
	b, err := os.ReadFile(meta)
	require.NoError(t, err)
	var info map[string]any
	require.NoError(t, json.Unmarshal(b, &info))
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	info["owner_pid"], info["owner_start"] = dead.Process.Pid, 1
	b, err = json.Marshal(info)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(meta, b, 0o600))
	rec, err := client.RecoverSessions(base)
	require.NoError(t, err)
	require.Empty(t, rec, "a session a server uses is not recoverable")

	require.NoError(t, c.Close())
	// Close has closed the lock's descriptor; a child that another test of
	// this process is forking holds a copy of it until its exec.
	require.Eventually(t, func() bool { return !s.InUse() }, 5*time.Second, time.Millisecond, "the session still locked after Close")
	rec, err = client.RecoverSessions(base)
	require.NoError(t, err)
	require.Len(t, rec, 1)
	c2, err := s.Start(ctx, client.Options{Binary: boxshPath()})
	require.NoError(t, err)
	r, err = c2.Run(ctx, "cat b.txt")
	require.NoError(t, err)
	require.Equal(t, "still\n", r.Stdout)
	require.NoError(t, c2.Close())
	require.NoError(t, s.Discard())
	require.NoDirExists(t, s.Dir())
}

// TestSessionListingsQuoteNames checks that names a sandbox chose reach the
// reviewer's terminal quoted as git quotes them. No listing of changes,
// diff or apply holds a raw escape or line break inside a name. --json
// keeps the exact names.
func TestSessionListingsQuoteNames(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	parent := t.TempDir()
	proj := filepath.Join(parent, "proj")
	require.NoError(t, os.MkdirAll(proj, 0o755))
	const esc, nl = "x\033[2K\rA harmless.txt", "y\nA innocent.txt"
	const escQ, nlQ = `"x\033[2K\rA harmless.txt"`, `"y\nA innocent.txt"`
	r := runBoxshIn(t, ctx, proj, "", nil, "--try", "-c", `umask 022; printf e > "$(printf 'x\033[2K\rA harmless.txt')"; printf n > "$(printf 'y\nA innocent.txt')"`)
	require.Equal(t, 0, r.code(), r.stderr)
	m := regexp.MustCompile(`boxsh: 2 file\(s\) changed in .*\n  boxsh apply (\S+)\n`).FindStringSubmatch(r.stderr)
	require.NotNil(t, m, r.stderr)
	dst := m[1]
	noRaw := func(what, out string) {
		t.Helper()
		assert.NotContains(t, out, "\033", "%s: a raw ESC", what)
		assert.NotContains(t, out, "\r", "%s: a raw CR", what)
	}
	noRaw("--try", r.stderr)

	r = runBoxshIn(t, ctx, proj, "", nil, "changes", dst)
	require.Equal(t, 0, r.code(), r.stderr)
	noRaw("changes", r.stdout)
	assert.Equal(t, []string{"A " + escQ + " (0644)", "A " + nlQ + " (0644)"}, lines(r.stdout))

	r = runBoxshIn(t, ctx, proj, "", nil, "changes", dst, "--json")
	require.Equal(t, 0, r.code(), r.stderr)
	noRaw("changes --json", r.stdout)
	var cs []client.Change
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &cs), r.stdout)
	require.Len(t, cs, 2)
	assert.Equal(t, esc, cs[0].Path, "--json keeps the exact name")
	assert.Equal(t, nl, cs[1].Path)

	r = runBoxshIn(t, ctx, proj, "", nil, "diff", dst)
	require.Equal(t, 0, r.code(), r.stderr)
	noRaw("diff", r.stdout)
	assert.Contains(t, r.stdout, "--- /dev/null\n+++ \"b/x\\033[2K\\rA harmless.txt\"\n")
	assert.Contains(t, r.stdout, "+++ \"b/y\\nA innocent.txt\"\n")
	for _, l := range lines(r.stdout) {
		assert.Regexp(t, `^(--- |\+\+\+ |@@ |\+[en]$|\\ No newline)`, l, "a forged or broken line")
	}

	r = runBoxshIn(t, ctx, proj, "", nil, "apply", dst, "--dry-run")
	require.Equal(t, 0, r.code(), r.stderr)
	noRaw("apply --dry-run", r.stdout+r.stderr)
	assert.Equal(t, []string{"would apply A " + escQ + " (0644)", "would apply A " + nlQ + " (0644)"}, lines(r.stdout))

	r = runBoxshIn(t, ctx, proj, "", nil, "apply", dst)
	require.Equal(t, 0, r.code(), r.stderr)
	noRaw("apply", r.stdout+r.stderr)
	assert.Equal(t, []string{"applied A " + escQ + " (0644)", "applied A " + nlQ + " (0644)"}, lines(r.stdout))
	b, err := os.ReadFile(filepath.Join(proj, esc))
	require.NoError(t, err, "applied under its exact name")
	assert.Equal(t, "e", string(b))
	assert.FileExists(t, filepath.Join(proj, nl))
}

// lines splits out into its lines.
func lines(out string) []string {
	if out == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// TestClientSessionProjectPath checks that a session's Client takes the
// project's host path. A write there lands in the session (DST), not in the
// project, until Apply. Reads, lists, stats and a command's cwd see the
// session's view at the same path.
func TestClientSessionProjectPath(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	repo := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "sub", "a.txt"), []byte("a\n"), 0o644))
	before := hostListing(t, repo)
	s, err := client.NewSession(ctx, client.SessionOptions{Src: repo, BaseDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Discard() })
	c, err := s.Start(ctx, client.Options{Binary: boxshPath()})
	require.NoError(t, err)
	defer c.Close()

	require.NoError(t, c.WriteString(ctx, filepath.Join(repo, "x"), "in the session\n"))
	_, err = c.Edit(ctx, filepath.Join(repo, "sub", "a.txt"), client.Edit{OldText: "a", NewText: "b"})
	require.NoError(t, err)
	got, err := c.ReadFile(ctx, filepath.Join(repo, "x"))
	require.NoError(t, err)
	require.Equal(t, "in the session\n", got)
	st, err := c.Stat(ctx, filepath.Join(repo, "x"))
	require.NoError(t, err)
	require.True(t, st.Exists)
	require.Equal(t, filepath.Join(repo, "x"), st.Path)
	st, err = c.Stat(ctx, "")
	require.NoError(t, err)
	require.Equal(t, repo, st.Path, "the working directory, as the host names it")
	l, err := c.List(ctx, client.ListRequest{Path: repo})
	require.NoError(t, err)
	require.Equal(t, repo, l.Path)
	r, err := c.Exec(ctx, client.ExecRequest{Command: "cat ../x a.txt", Cwd: filepath.Join(repo, "sub")})
	require.NoError(t, err)
	require.Equal(t, "in the session\nb\n", r.Stdout, r.Stderr)

	require.Equal(t, before, hostListing(t, repo), "the project is untouched before Apply")
	require.NoError(t, c.Close())
	res, err := s.Apply(client.ApplyOptions{})
	require.NoError(t, err)
	require.Len(t, res.Applied, 2)
	b, err := os.ReadFile(filepath.Join(repo, "x"))
	require.NoError(t, err)
	require.Equal(t, "in the session\n", string(b))
}

// TestApplyKeepsSrcClosed checks that Apply never opens SRC to other users.
// Modes a sandbox set are applied without the group or other write, set-ID
// or sticky bits that SRC did not have. changes shows every new entry's
// mode and flags the open ones.
func TestApplyKeepsSrcClosed(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	parent := t.TempDir()
	proj := filepath.Join(parent, "proj")
	for _, d := range []string{"pub", "sub"} {
		require.NoError(t, os.MkdirAll(filepath.Join(proj, d), 0o755))
		require.NoError(t, os.Chmod(filepath.Join(proj, d), 0o755))
	}
	for _, f := range []string{"pub/f", "a.txt", "s"} {
		require.NoError(t, os.WriteFile(filepath.Join(proj, f), []byte(f+"\n"), 0o644))
		require.NoError(t, os.Chmod(filepath.Join(proj, f), 0o644))
	}
	before := srcModes(t, proj)
	r := runBoxshIn(t, ctx, proj, "", nil, "--try", "-c",
		"chmod 777 pub; chmod 666 pub/f a.txt; chmod 1777 sub; chmod 4755 s; mkdir -m 777 open; echo n > open/n; chmod 666 open/n; mkdir -m 1777 tmp; echo x >> a.txt")
	require.Equal(t, 0, r.code(), r.stderr)
	m := regexp.MustCompile(`changed in .*\n  boxsh apply (\S+)\n`).FindStringSubmatch(r.stderr)
	require.NotNil(t, m, r.stderr)
	dst := m[1]

	r = runBoxshIn(t, ctx, proj, "", nil, "changes", dst)
	require.Equal(t, 0, r.code(), r.stderr)
	// (The sandbox may refuse chmod 4755 itself; if it let it through,
	// the listing flags it and apply skips it.)
	var listed []string
	setuid := false
	for _, l := range lines(r.stdout) {
		if strings.HasPrefix(l, "P s ") {
			assert.Equal(t, "P s (0644 -> 04755, setuid)", l)
			setuid = true
			continue
		}
		listed = append(listed, l)
	}
	assert.Equal(t, []string{
		"M a.txt (0644 -> 0666, group-writable, world-writable)",
		"A open/ (0777, group-writable, world-writable)",
		"A open/n (0666, group-writable, world-writable)",
		"P pub/ (0755 -> 0777, group-writable, world-writable)",
		"P pub/f (0644 -> 0666, group-writable, world-writable)",
		"P sub/ (0755 -> 01777, group-writable, world-writable)",
		"A tmp/ (01777, group-writable, world-writable)",
	}, listed)

	r = runBoxshIn(t, ctx, proj, "", nil, "apply", dst)
	if setuid {
		assert.Equal(t, 3, r.code(), "s is skipped:\n%s%s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "skipped P s (0644 -> 04755, setuid): setuid or setgid bits\n")
	} else {
		assert.Equal(t, 0, r.code(), "%s%s", r.stdout, r.stderr)
	}
	assert.Contains(t, r.stdout, "narrowed P sub/ (0755 -> 01777, group-writable, world-writable): mode 01777 applied as 0755")
	after := srcModes(t, proj)
	for rel, mode := range after {
		old, had := before[rel]
		if !had {
			old = before["."] // a new entry is held to SRC's directory (0755 here)
		}
		assert.Zero(t, mode&^old&0o7022, "%s: mode %04o adds group/other write, set-ID or sticky bits to %04o", rel, mode, old)
	}
	assert.Equal(t, uint32(0o755), after["pub"])
	assert.Equal(t, uint32(0o644), after["pub/f"])
	assert.Equal(t, uint32(0o644), after["a.txt"])
	assert.Equal(t, uint32(0o755), after["sub"])
	assert.Equal(t, uint32(0o644), after["s"])
	assert.Equal(t, uint32(0o755), after["open"])
	assert.Equal(t, uint32(0o644), after["open/n"])
	assert.Equal(t, uint32(0o755), after["tmp"])
	b, err := os.ReadFile(filepath.Join(proj, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a.txt\nx\n", string(b), "the content is applied")
}

// srcModes are the permission bits (the kernel's) of everything in root.
func srcModes(t *testing.T, root string) map[string]uint32 {
	t.Helper()
	out := map[string]uint32{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		var st syscall.Stat_t
		require.NoError(t, syscall.Lstat(p, &st))
		rel, _ := filepath.Rel(root, p)
		out[rel] = uint32(st.Mode) & 0o7777
		return nil
	}))
	return out
}
