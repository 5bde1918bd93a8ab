package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/fstype"
)

func TestFrontReadCredsCover(t *testing.T) {
	front := status{uid: "1000 1000 1000 1000", gid: "1000 1000 1000 1000", groups: "27 1000", capEff: "0000000000000000"}
	sandbox := status{uid: front.uid, gid: front.gid, groups: "1000 27", capEff: "00000000a80425f9"}
	require.NoError(t, credsCover(sandbox, front), "the sandbox's capabilities only add; the groups' order does not count")

	for name, c := range map[string]struct{ sandbox, front status }{
		"front with a capability": {sandbox, func() status { f := front; f.capEff = "0000000000000002"; return f }()},
		"front is root":           {sandbox, func() status { f := front; f.uid = "0 0 0 0"; return f }()},
		"another uid":             {func() status { s := sandbox; s.uid = "1001 1001 1001 1001"; return s }(), front},
		"another saved uid":       {func() status { s := sandbox; s.uid = "1000 1000 0 1000"; return s }(), front},
		"another fsgid":           {func() status { s := sandbox; s.gid = "1000 1000 1000 27"; return s }(), front},
		"a group dropped":         {func() status { s := sandbox; s.groups = "1000"; return s }(), front},
		"no groups at all":        {func() status { s := sandbox; s.groups = ""; return s }(), front},
		// A group of the sandbox's alone: a file of that group, mode 0604,
		// is denied to the sandbox and readable by the front.
		"a group added": {func() status { s := sandbox; s.groups = "27 1000 65534"; return s }(), front},
		"unknown front": {sandbox, status{}},
	} {
		assert.Error(t, credsCover(c.sandbox, c.front), name)
	}
}

func TestFrontReadParseStatus(t *testing.T) {
	b := []byte("Name:\tboxsh-init\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t27 1000 \nCapEff:\t00000000a80425f9\n")
	assert.Equal(t, status{uid: "1000 1000 1000 1000", gid: "1000 1000 1000 1000", groups: "27 1000", capEff: "00000000a80425f9"}, parseStatus(b))
	self, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	s := parseStatus(self)
	assert.NotEmpty(t, s.uid)
	assert.NotEmpty(t, s.capEff)
}

// TestFrontReadOpenInRoot checks the opening of a name in a root on its own
// (as the test's user, in a directory standing in for a sandbox's root):
// links resolve within the root, never out of it, and only regular files
// are opened.
func TestFrontReadOpenInRoot(t *testing.T) {
	rootDir, outside := t.TempDir(), t.TempDir()
	var sfs unix.Statfs_t
	require.NoError(t, unix.Statfs(rootDir, &sfs))
	if !fstype.SameForEveryReader(sfs.Type) {
		t.Skipf("the test's temporary directory is on a file system the front does not read (%#x)", sfs.Type)
	}
	secret := filepath.Join(outside, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("outside"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(rootDir, "file"), []byte("inside"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(rootDir, filepath.Dir(secret)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(rootDir, secret), []byte("the root's own"), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(rootDir, "abs")))
	require.NoError(t, os.Symlink(strings.Repeat("../", 20)+strings.TrimPrefix(secret, "/"), filepath.Join(rootDir, "rel")))
	require.NoError(t, os.Symlink("/proc/self/root"+secret, filepath.Join(rootDir, "magic")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(rootDir, "fifo"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(rootDir, "mode0"), []byte("x"), 0))
	root, err := unix.Open(rootDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(root)

	read := func(path string) (string, bool) {
		fd, size, ok := openInRoot(root, path)
		if !ok {
			return "", false
		}
		defer unix.Close(fd)
		b := make([]byte, size)
		n, err := unix.Read(fd, b)
		require.NoError(t, err)
		return string(b[:n]), true
	}
	for path, want := range map[string]string{
		"/file": "inside", "/../../file": "inside", "/abs": "the root's own", "/rel": "the root's own",
		secret: "the root's own",
	} {
		got, ok := read(path)
		assert.True(t, ok, path)
		assert.Equal(t, want, got, path)
	}
	for _, path := range []string{"/magic", "/fifo", "/", "/missing", "/proc/self/status", "/dev/null"} {
		_, ok := read(path)
		assert.False(t, ok, path)
	}
	if os.Geteuid() != 0 {
		_, ok := read("/mode0")
		assert.False(t, ok, "a file of mode 0")
	}
}
