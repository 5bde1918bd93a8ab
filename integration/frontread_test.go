//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/fstype"
	"github.com/boxsh/boxsh/internal/syncbuf"
)

// servedLine is what the front logs at --log-level debug for each read it
// serves itself instead of boxsh-init.
const servedLine = "read served by the front: path="

// frontReadSandbox is a sandboxed server whose working directory is a
// project bound wr: at its own path, with a read-only bind beside, and a
// host directory outside the sandbox's view holding a secret.
type frontReadSandbox struct {
	s                 *server
	project, readOnly string
	// hostSecret is a host file the sandbox does not see, and secret its
	// content.
	hostSecret, secret string
}

func startFrontReadSandbox(t *testing.T) *frontReadSandbox {
	t.Helper()
	requireRootless(t)
	project, readOnly, outside := t.TempDir(), t.TempDir(), t.TempDir()
	secret := fmt.Sprintf("HOST-SECRET-%d", time.Now().UnixNano())
	hostSecret := filepath.Join(outside, "secret.txt")
	writeHostFile(t, hostSecret, secret+"\n", 0o644)
	writeHostFile(t, filepath.Join(project, "config", ".env"), "SECRET=1\n", 0o644)
	s := startServer(t, testContext(t), serverOptions{dir: project, env: policyEnv(t.TempDir()),
		args: []string{"--sandbox", "--bind", "wr:" + project, "--bind", "ro:" + readOnly, "--log-level", "debug"}})
	// The front takes the sandbox's root once boxsh-init has answered a
	// call.
	s.call("read", map[string]any{"path": "first-call"})
	return &frontReadSandbox{s: s, project: project, readOnly: readOnly, hostSecret: hostSecret, secret: secret}
}

// read reads path and returns the raw result (or error) of the response.
func (f *frontReadSandbox) read(t *testing.T, args map[string]any) []byte {
	t.Helper()
	m := f.s.call("read", args)
	if m.Error != nil {
		return m.Raw
	}
	require.NotEmpty(t, m.Result, "response without result: %s", m.Raw)
	return m.Result
}

// served is how many reads of path the front has logged serving.
func (f *frontReadSandbox) served(path string) int {
	return strings.Count(f.s.stderr.String(), servedLine+path+"\n")
}

// settle waits until the front has logged a read of a file it serves, done
// after every read before: stderr is then read up to those reads' lines.
func (f *frontReadSandbox) settle(t *testing.T) {
	t.Helper()
	marker := filepath.Join(f.project, "marker.txt")
	writeHostFile(t, marker, "marker\n", 0o644)
	want := f.served(marker) + 1
	f.read(t, map[string]any{"path": marker})
	require.Eventually(t, func() bool { return f.served(marker) >= want }, 10*time.Second, 5*time.Millisecond,
		"the front served no read of %s; stderr:\n%s", marker, truncate(f.s.stderr.String()))
}

// relative is path as boxsh-init alone reads it: relative to its working
// directory, the project (the front serves absolute paths only).
func (f *frontReadSandbox) relative(t *testing.T, path string) string {
	t.Helper()
	rel, err := filepath.Rel(f.project, path)
	require.NoError(t, err)
	require.False(t, filepath.IsAbs(rel))
	return rel
}

// TestReadFrontEquivalence checks that a read the front serves is byte for
// byte the answer boxsh-init gives for the same file, over a corpus of
// small files and arguments, and that the front leaves to boxsh-init what
// it must (a file of filetype.HeadSize bytes, an image).
func TestReadFrontEquivalence(t *testing.T) {
	t.Parallel()
	f := startFrontReadSandbox(t)
	lines := strings.Repeat("line of text\n", 630) // 8190 bytes
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	corpus := []struct {
		name, content string
		args          map[string]any
		served        bool
	}{
		{"text.txt", "hello\nworld\n", nil, true},
		{"empty", "", nil, true},
		{"crlf.txt", "one\r\ntwo\r\n", nil, true},
		{"noeol.txt", "no newline at the end", nil, true},
		{"utf16.txt", "\xff\xfeh\x00i\x00\n\x00", nil, true},
		{"binary.bin", string(binary), nil, true},
		{"invalid-utf8.txt", "caf\xe9\n", nil, true},
		{"f8191.txt", lines + "x", nil, true},
		{"f8192.txt", lines + "xy", nil, false},
		{"image.png", string(png), nil, false},
		{"offset.txt", "a\nb\nc\nd\n", map[string]any{"offset": 2, "limit": 2}, true},
		{"offset-past.txt", "a\nb\n", map[string]any{"offset": 9}, true},
		{"limit.txt", "a\nb\nc\n", map[string]any{"limit": 1}, true},
	}
	for _, c := range corpus {
		writeHostFile(t, filepath.Join(f.project, c.name), c.content, 0o644)
	}
	require.NoError(t, os.Symlink("text.txt", filepath.Join(f.project, "link-inside")))
	writeHostFile(t, filepath.Join(f.readOnly, "ro.txt"), "read-only bind\n", 0o644)
	corpus = append(corpus, struct {
		name, content string
		args          map[string]any
		served        bool
	}{"link-inside", "", nil, true})

	check := func(path string, args map[string]any, served bool) {
		t.Helper()
		abs := map[string]any{"path": path}
		rel := map[string]any{"path": f.relative(t, path)}
		for k, v := range args {
			abs[k], rel[k] = v, v
		}
		before := f.served(path)
		got := f.read(t, abs)
		want := f.read(t, rel)
		assert.Equal(t, string(want), string(got), "%s %v: the front's answer is not boxsh-init's", path, args)
		f.settle(t)
		if served {
			assert.Equal(t, before+1, f.served(path), "%s %v: not served by the front", path, args)
		} else {
			assert.Equal(t, before, f.served(path), "%s %v: served by the front", path, args)
		}
	}
	for _, c := range corpus {
		check(filepath.Join(f.project, c.name), c.args, c.served)
	}
	check(filepath.Join(f.readOnly, "ro.txt"), nil, true)
}

// TestReadFrontEscapes checks the reads an agent could aim at what the
// sandbox does not show: links out of its view (absolute, relative, through
// a directory, through /proc's magic links), /proc itself, the terminal, a
// FIFO, a denyRead path, a file of mode 0. None is served by the front, and
// none answers the host's secret.
func TestReadFrontEscapes(t *testing.T) {
	t.Parallel()
	f := startFrontReadSandbox(t)
	p := f.project
	up := strings.Repeat("../", strings.Count(p, "/")+3)
	require.NoError(t, os.Symlink(f.hostSecret, filepath.Join(p, "link-abs")))
	require.NoError(t, os.Symlink(up+strings.TrimPrefix(f.hostSecret, "/"), filepath.Join(p, "link-rel")))
	require.NoError(t, os.Symlink(filepath.Dir(f.hostSecret), filepath.Join(p, "link-dir")))
	require.NoError(t, os.Symlink("/proc/self/root"+f.hostSecret, filepath.Join(p, "link-magic")))
	require.NoError(t, os.Symlink("link-loop-b", filepath.Join(p, "link-loop-a")))
	require.NoError(t, os.Symlink("link-loop-a", filepath.Join(p, "link-loop-b")))
	writeHostFile(t, filepath.Join(p, "mode0.txt"), "mode 0\n", 0)
	require.NoError(t, syscall.Mkfifo(filepath.Join(p, "fifo"), 0o644))

	paths := []string{
		filepath.Join(p, "link-abs"),
		filepath.Join(p, "link-rel"),
		filepath.Join(p, "link-dir", "secret.txt"),
		filepath.Join(p, "link-magic"),
		filepath.Join(p, "link-loop-a"),
		p + "/" + up + strings.TrimPrefix(f.hostSecret, "/"),
		"/proc/self/root" + f.hostSecret,
		"/proc/1/root" + f.hostSecret,
		"/proc/self/environ",
		"/proc/1/environ",
		"/proc/self/status",
		"/dev/tty",
		"/dev/null",
		filepath.Join(p, "config", ".env"),
		filepath.Join(p, "mode0.txt"),
		f.hostSecret,
	}
	for _, path := range paths {
		got := f.read(t, map[string]any{"path": path})
		assert.NotContains(t, string(got), f.secret, "%s: the host's secret", path)
		assert.NotContains(t, string(got), "SECRET=1", "%s: the denyRead file", path)
	}
	// A FIFO: the front does not open it, and nothing else waits for the
	// read of it, which boxsh-init runs until a writer comes.
	fifo := filepath.Join(p, "fifo")
	id := f.s.newID()
	f.s.callTool(id, "read", map[string]any{"path": fifo})
	f.settle(t)
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = w.WriteString("through the fifo\n")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	f.s.expect(`"` + id + `"`)

	f.settle(t)
	for _, path := range append(paths, fifo) {
		assert.Zero(t, f.served(path), "%s: served by the front", path)
	}
	// The denyRead file and the file of mode 0 get boxsh-init's refusal,
	// with the policy's rule where one covers it.
	env := f.read(t, map[string]any{"path": filepath.Join(p, "config", ".env")})
	assert.Contains(t, string(env), "refused by the sandbox's policy")
	mode0 := f.read(t, map[string]any{"path": filepath.Join(p, "mode0.txt")})
	assert.Contains(t, strings.ToLower(string(mode0)), "permission denied")
}

// TestReadFrontSwappedLink reads a link that a process of the sandbox swaps
// as fast as it can between a file of the sandbox, the host's secret (out
// of its view) and a loop, while the reads run: every answer is the
// sandbox's file or boxsh-init's error, never the secret.
func TestReadFrontSwappedLink(t *testing.T) {
	t.Parallel()
	f := startFrontReadSandbox(t)
	p := f.project
	writeHostFile(t, filepath.Join(p, "inside.txt"), "inside\n", 0o644)
	require.NoError(t, os.Symlink("inside.txt", filepath.Join(p, "swapped")))
	require.NoError(t, os.Symlink("loop-b", filepath.Join(p, "loop-a")))
	require.NoError(t, os.Symlink("loop-a", filepath.Join(p, "loop-b")))
	start := f.s.call("bash", map[string]any{"background": true, "command": fmt.Sprintf(
		"cd %s && while :; do ln -sfn inside.txt swapped; ln -sfn %s swapped; ln -sfn loop-a swapped; ln -sfn ../../..%s swapped; done", p, f.hostSecret, f.hostSecret)})
	require.Nil(t, start.Error, "%s", start.Raw)
	inside := f.read(t, map[string]any{"path": filepath.Join(p, "inside.txt")})
	path := filepath.Join(p, "swapped")
	// The swapping has begun once a read finds the link elsewhere.
	deadline := time.Now().Add(20 * time.Second)
	for {
		m := f.s.call("read", map[string]any{"path": path})
		require.NotContains(t, string(m.Raw), f.secret)
		if m.Error == nil && m.toolResult(t).IsError {
			break
		}
		require.True(t, time.Now().Before(deadline), "the link was never seen swapped")
	}
	var ok, failed int
	for range 400 {
		m := f.s.call("read", map[string]any{"path": path})
		require.Nil(t, m.Error, "%s", m.Raw)
		require.NotContains(t, string(m.Result), f.secret, "the host's secret through the swapped link")
		r := m.toolResult(t)
		if r.IsError {
			failed++
			continue
		}
		require.Equal(t, string(inside), string(m.Result), "neither the sandbox's file nor an error")
		ok++
	}
	f.settle(t)
	t.Logf("%d reads of the file, %d errors, %d served by the front", ok, failed, f.served(path))
	assert.NotZero(t, f.served(path), "the front served none of the reads: the race was not run")
}

// TestReadFrontSDK drives a sandboxed boxsh with the official MCP Go SDK: a
// small read of an absolute path is served by the front, the same read by
// a relative path by boxsh-init, with the same result.
func TestReadFrontSDK(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	project := t.TempDir()
	file := filepath.Join(project, "notes.txt")
	writeHostFile(t, file, "front\nread\n", 0o644)
	cmd := exec.CommandContext(ctx, boxshPath(), "--rpc", "--sandbox", "--bind", "wr:"+project, "--log-level", "debug")
	cmd.Dir = project
	cmd.Env = append(os.Environ(), policyEnv(t.TempDir())...)
	cmd.WaitDelay = 5 * time.Second
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "boxsh-integration", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, nil)
	require.NoError(t, err, "connect to boxsh --rpc --sandbox")
	defer session.Close()

	// The first call is boxsh-init's: the front takes the sandbox's root
	// once boxsh-init has answered.
	byInit := sdkCall(t, ctx, session, "read", map[string]any{"path": "notes.txt"})
	byFront := sdkCall(t, ctx, session, "read", map[string]any{"path": file})
	assert.Equal(t, "front\nread\n", sdkText(t, byFront))
	a, err := json.Marshal(byFront)
	require.NoError(t, err)
	b, err := json.Marshal(byInit)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(a))
	missing := sdkCall(t, ctx, session, "read", map[string]any{"path": filepath.Join(project, "missing")})
	assert.True(t, missing.IsError)
	// A last served read: its line follows the others in stderr.
	sdkCall(t, ctx, session, "read", map[string]any{"path": file})
	assert.Eventually(t, func() bool { return strings.Count(stderr.String(), servedLine+file+"\n") >= 2 }, 10*time.Second, 5*time.Millisecond)
	log := stderr.String()
	assert.Equal(t, 2, strings.Count(log, servedLine+file+"\n"), "reads of %s served by the front; stderr:\n%s", file, truncate(log))
	assert.NotContains(t, log, servedLine+"notes.txt")
	assert.NotContains(t, log, servedLine+filepath.Join(project, "missing"))
	assert.True(t, bytes.Contains([]byte(sdkText(t, missing)), []byte("no such file")), sdkText(t, missing))
}

// hostMountsBounded tells whether every mount of the test's mount namespace
// is of a type whose lookups wait for no server (fstype.MountsBounded): only
// then does the front of plain mode serve reads.
func hostMountsBounded(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	return fstype.MountsBounded(b)
}

// TestReadFrontPlain checks the reads the front serves in plain mode (no
// --sandbox), through its own root, which boxsh-init shares: the same
// answers as boxsh-init's, served where every mount of the host is of a
// bounded type, and never /proc, a device or a missing file.
func TestReadFrontPlain(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	s := startServer(t, testContext(t), serverOptions{dir: project, args: []string{"--log-level", "debug"}})
	f := &frontReadSandbox{s: s, project: project}
	s.call("read", map[string]any{"path": "first-call"})
	serves := hostMountsBounded(t)
	for name, content := range map[string]string{"text.txt": "plain\nmode\n", "empty": "", "bin": "\x00\x01\x02"} {
		path := filepath.Join(project, name)
		writeHostFile(t, path, content, 0o644)
		got := f.read(t, map[string]any{"path": path})
		want := f.read(t, map[string]any{"path": name})
		assert.Equal(t, string(want), string(got), "%s: the front's answer is not boxsh-init's", name)
	}
	for _, path := range []string{"/proc/self/status", "/dev/null", filepath.Join(project, "missing")} {
		f.read(t, map[string]any{"path": path})
	}
	if !serves {
		// The front serves none: a read it would have served shows it.
		f.read(t, map[string]any{"path": filepath.Join(project, "text.txt")})
		assert.NotContains(t, s.stderr.String(), servedLine, "the host has a mount of an unbounded type")
		return
	}
	f.settle(t)
	assert.Equal(t, 1, f.served(filepath.Join(project, "text.txt")))
	assert.Equal(t, 1, f.served(filepath.Join(project, "empty")))
	for _, path := range []string{"/proc/self/status", "/dev/null", filepath.Join(project, "missing")} {
		assert.Zero(t, f.served(path), path)
	}
}
