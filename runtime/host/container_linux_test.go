package host

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

// TestSandboxSupported checks that a build without seccomp support says
// so (go test builds without the seccomp tag; just build with it).
func TestSandboxSupported(t *testing.T) {
	if seccomp.Enabled {
		assert.NoError(t, SandboxSupported())
		return
	}
	assert.ErrorContains(t, SandboxSupported(), "seccomp support")
}

func TestStateHidden(t *testing.T) {
	// Another state directory an earlier start made (TMPDIR's, here).
	t.Setenv("TMPDIR", t.TempDir())
	other := filepath.Join(os.TempDir(), fmt.Sprintf("boxsh-%d", os.Getuid()))
	require.NoError(t, os.Mkdir(other, 0o700))
	for _, dst := range []string{os.TempDir(), other} {
		b := policy.Bind{Mode: policy.ReadWrite, Src: dst, Dst: dst}
		assert.ErrorContains(t, stateHidden(policy.Sandbox{Binds: []policy.Bind{b}}, "/run/user/1000/boxsh"), other, b.String())
	}

	root := "/run/user/1000/boxsh"
	for _, b := range []policy.Bind{
		{Mode: policy.ReadWrite, Src: "/run/user/1000", Dst: "/run/user/1000"},
		{Mode: policy.ReadWrite, Src: root + "/sb-x", Dst: root + "/sb-x"},
		{Mode: policy.CopyOnWrite, Src: "/src", Dst: "/run"},
	} {
		assert.ErrorContains(t, stateHidden(policy.Sandbox{Binds: []policy.Bind{b}}, root), "state directory", b.String())
	}
	assert.NoError(t, stateHidden(policy.Sandbox{Binds: []policy.Bind{
		{Mode: policy.ReadOnly, Src: "/run/user/1000", Dst: "/run/user/1000"},
		{Mode: policy.ReadWrite, Src: "/home/u", Dst: "/home/u"},
	}}, root))
}

// TestSweepStaleRemovalsCutShort checks that a start's sweep removes the
// state directory of a dead sandbox, and one whose removal a kill cut short
// after its lock file, and leaves a locked one and one in the making.
func TestSweepStaleRemovalsCutShort(t *testing.T) {
	root := t.TempDir()
	live, lock, err := newContainerDir(root)
	require.NoError(t, err)
	defer lock.Close()
	making := filepath.Join(root, "new-123")
	_, deadLock, err := newContainerDir(root)
	require.NoError(t, err)
	deadLock.Close()
	cutShort := filepath.Join(root, "sb-1.detached")
	for _, d := range []string{making, filepath.Join(cutShort, "placeholders", "dir")} {
		require.NoError(t, os.MkdirAll(d, 0o700))
	}
	require.NoError(t, os.Chmod(filepath.Join(cutShort, "placeholders", "dir"), 0o555))

	sweepStale(root, hclog.NewNullLogger())
	var left []string
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.ElementsMatch(t, []string{filepath.Base(live), filepath.Base(making)}, left)
}
