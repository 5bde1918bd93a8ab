//go:build linux

package integration

import (
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// asInit is path as boxsh-init alone reads it: the same string made
// relative to its working directory, the project, by climbing to the root
// (the front serves absolute paths only). Unlike filepath.Rel, it keeps the
// path's length and its "..".
func (f *frontReadSandbox) asInit(path string) string {
	return strings.Repeat("../", strings.Count(f.project, "/")) + strings.TrimPrefix(path, "/")
}

// sameAsInit reads path absolute, which the front may serve, and as
// boxsh-init alone reads it, and requires the same answer, the path's
// spelling in error messages aside. It returns the front's answer.
func (f *frontReadSandbox) sameAsInit(t *testing.T, path string) string {
	t.Helper()
	got := string(f.read(t, map[string]any{"path": path}))
	rel := f.asInit(path)
	want := strings.ReplaceAll(string(f.read(t, map[string]any{"path": rel})), rel, path)
	assert.Equal(t, want, got, "%.200s: the front's answer is not boxsh-init's", path)
	return got
}

// TestReadFrontSandboxMade reads what a command of the sandbox makes for
// itself: in its /tmp (its own tmpfs) a file, a whiteout (the character
// device 0:0, the one device root of a user namespace may make), a file of
// mode 0, a link to the host's secret, a name of 255 bytes; in its bind a
// hard link to a file of mode 0 and one to a denyRead file; and a socket
// (a program's, made on the host), a path of a thousand ".." and one over
// PATH_MAX. Each answer is boxsh-init's and none the secret; only the
// readable regular files are served.
func TestReadFrontSandboxMade(t *testing.T) {
	t.Parallel()
	f := startFrontReadSandbox(t)
	p := f.project
	writeHostFile(t, filepath.Join(p, "mode0.txt"), "mode 0\n", 0)
	l, err := net.Listen("unix", filepath.Join(p, "sock"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	long := strings.Repeat("n", 255)
	out := f.s.bash(`cd /tmp && printf 'made in the sandbox\n' > made.txt && printf 'x\n' > mode0.txt && chmod 0 mode0.txt &&
ln -s ` + f.hostSecret + ` link-secret && printf 'long name\n' > ` + long + ` &&
ln ` + p + `/mode0.txt ` + p + `/hardlink-mode0 && { mknod whiteout c 0 0 && echo whiteout; ln ` + p + `/config/.env ` + p + `/hardlink-env 2>/dev/null && echo env-linked; true; }`)
	require.Equal(t, 0, out.ExitCode, "%+v", out)
	assert.Equal(t, "whiteout\n", out.Stdout, "root of the user namespace makes a whiteout, and no hard link to a denyRead file")

	served := map[string]string{
		"/tmp/made.txt": "made in the sandbox",
		"/tmp/" + long:  "long name",
		"/tmp/" + strings.Repeat("../", 1000) + "tmp/made.txt": "made in the sandbox",
	}
	refused := []string{
		"/tmp/whiteout",
		"/tmp/mode0.txt",
		"/tmp/link-secret",
		"/tmp/" + long + "n",
		"/tmp/" + strings.Repeat("./", 2100) + "made.txt",
		filepath.Join(p, "hardlink-mode0"),
		filepath.Join(p, "hardlink-env"),
		filepath.Join(p, "sock"),
	}
	for path, want := range served {
		got := f.sameAsInit(t, path)
		assert.Contains(t, got, want, "%.200s", path)
	}
	for _, path := range refused {
		got := f.sameAsInit(t, path)
		assert.NotContains(t, got, f.secret, "%.200s: the host's secret", path)
		assert.NotContains(t, got, "SECRET=1", "%.200s: the denyRead file", path)
		assert.NotContains(t, got, "mode 0\\n", "%.200s: the file of mode 0", path)
	}
	f.settle(t)
	for path := range served {
		assert.Equal(t, 1, f.served(path), "%.200s: not served by the front", path)
	}
	for _, path := range refused {
		assert.Zero(t, f.served(path), "%.200s: served by the front", path)
	}
}

// TestReadFrontRestartedInit has a command of the sandbox end boxsh-init
// (kill -TERM 1) once the front has taken its root, after the host made a
// .env that the running sandbox does not cover: the reads after are through
// the new sandbox's root, which covers it, never through the old one, which
// the front's descriptor would otherwise keep (its /tmp with it).
func TestReadFrontRestartedInit(t *testing.T) {
	t.Parallel()
	f := startFrontReadSandbox(t)
	require.Equal(t, 0, f.s.bash(`printf 'old sandbox\n' > /tmp/stale.txt`).ExitCode)
	assert.Contains(t, f.sameAsInit(t, "/tmp/stale.txt"), "old sandbox")
	f.settle(t)
	require.Equal(t, 1, f.served("/tmp/stale.txt"))
	late := filepath.Join(f.project, "late", ".env")
	writeHostFile(t, late, "LATE-SECRET\n", 0o644)

	init := findChild(t, f.s.pid(), "boxsh-init")
	out := restartInit(t, f.s, `printf 'new sandbox\n' > /tmp/fresh.txt && test ! -e /tmp/stale.txt && echo fresh`).bash(t)
	require.Equal(t, "fresh\n", out.Stdout, "%+v", out)
	assert.NotEqual(t, init, findChild(t, f.s.pid(), "boxsh-init"), "boxsh-init was not restarted")

	got := f.sameAsInit(t, late)
	assert.NotContains(t, got, "LATE-SECRET", "a read through the dead sandbox's root")
	assert.Contains(t, got, "refused by the sandbox's policy")
	got = f.sameAsInit(t, "/tmp/stale.txt")
	assert.NotContains(t, got, "old sandbox", "a read through the dead sandbox's root")
	assert.Contains(t, got, "no such file")
	assert.Contains(t, f.sameAsInit(t, "/tmp/fresh.txt"), "new sandbox")
	f.settle(t)
	assert.Zero(t, f.served(late))
	assert.Equal(t, 1, f.served("/tmp/stale.txt"), "the dead sandbox's file served by the front")
	assert.Equal(t, 1, f.served("/tmp/fresh.txt"), "the new sandbox's reads not served by the front")
}

// TestReadFrontCow reads through a cow bind (an overlay) after a command of
// the sandbox removed a file of the lower layer (a whiteout), rewrote one
// (copied up), and replaced a directory by a new one (opaque): the front
// answers what the merged view shows, as boxsh-init does, never the lower
// layer's hidden content nor a file of mode 0 of it, and serves only the
// readable files.
func TestReadFrontCow(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	project, base := t.TempDir(), t.TempDir()
	// The overlay's work directory, which the kernel leaves of mode 0.
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+rwx", base).Run() })
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	for name, content := range map[string]string{"kept.txt": "lower kept\n", "removed.txt": "lower removed\n",
		"changed.txt": "lower changed\n", "hidden/inner.txt": "lower hidden\n"} {
		writeHostFile(t, filepath.Join(src, name), content, 0o644)
	}
	writeHostFile(t, filepath.Join(src, "mode0.txt"), "lower mode 0\n", 0)
	s := startServer(t, testContext(t), serverOptions{dir: project, env: policyEnv(t.TempDir()),
		args: []string{"--sandbox", "--bind", "wr:" + project, "--bind", "cow:" + src + ":" + dst, "--log-level", "debug"}})
	f := &frontReadSandbox{s: s, project: project}
	out := s.bash("cd " + dst + " && rm removed.txt && printf 'upper changed\\n' > changed.txt && rm -r hidden && mkdir hidden && printf 'upper new\\n' > hidden/new.txt && echo done")
	require.Equal(t, "done\n", out.Stdout, "%+v", out)

	served := map[string]string{"kept.txt": "lower kept", "changed.txt": "upper changed", "hidden/new.txt": "upper new"}
	for name, want := range served {
		got := f.sameAsInit(t, filepath.Join(dst, name))
		assert.Contains(t, got, want, name)
	}
	refused := []string{filepath.Join(dst, "removed.txt"), filepath.Join(dst, "hidden", "inner.txt"), filepath.Join(dst, "mode0.txt"),
		filepath.Join(src, "kept.txt")}
	for _, path := range refused {
		got := f.sameAsInit(t, path)
		assert.NotContains(t, got, "lower", path)
		assert.Contains(t, got, `"isError":true`, path)
	}
	f.settle(t)
	for name := range served {
		assert.Equal(t, 1, f.served(filepath.Join(dst, name)), "%s not served by the front", name)
	}
	for _, path := range refused {
		assert.Zero(t, f.served(path), "%s served by the front", path)
	}
	requireHostFile(t, filepath.Join(src, "removed.txt"), "lower removed\n")
}

// TestReadFrontResized reads a file that a command of the sandbox rewrites
// in place as fast as it can, truncated then filled, now with a small text,
// now with one over filetype.HeadSize, while 300 reads run: the front reads
// between the fstat and the read what it finds, or leaves the file to
// boxsh-init, and every answer holds a head of one text or the other,
// never more, nor another file's bytes.
func TestReadFrontResized(t *testing.T) {
	t.Parallel()
	f := startFrontReadSandbox(t)
	small, large := strings.Repeat("small line\n", 10), strings.Repeat("L", 9000)
	writeHostFile(t, filepath.Join(f.project, "small"), small, 0o644)
	writeHostFile(t, filepath.Join(f.project, "large"), large, 0o644)
	path := "/tmp/resized.txt"
	start := f.s.call("bash", map[string]any{"background": true, "command": "cd " + f.project +
		" && cp small " + path + " && while :; do cat large > " + path + "; cat small > " + path + "; done"})
	require.Nil(t, start.Error, "%s", start.Raw)
	sizes := map[int]int{}
	for range 300 {
		m := f.s.call("read", map[string]any{"path": path})
		r := m.toolResult(t)
		if r.IsError {
			sizes[-1]++
			continue
		}
		var sc struct {
			Content string `json:"content"`
		}
		require.NoError(t, json.Unmarshal(r.StructuredContent, &sc), "%s", m.Raw)
		ok := strings.HasPrefix(small, sc.Content) || strings.HasPrefix(large, sc.Content)
		require.True(t, ok, "the answer is a head of neither text: %.300s", m.Raw)
		sizes[len(sc.Content)]++
	}
	f.settle(t)
	t.Logf("content lengths and how often: %v; %d served by the front", sizes, f.served(path))
	assert.NotZero(t, f.served(path), "the front served none of the reads: the race was not run")
}
