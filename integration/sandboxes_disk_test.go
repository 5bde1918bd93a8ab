package integration

import (
	"io/fs"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
)

// diskUse is the space the tree of dir takes on the host (its blocks).
func diskUse(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		var st syscall.Stat_t
		if err == nil && syscall.Lstat(p, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// sandboxDisk waits for the server to report sandbox name's disk use with
// full as wanted, and returns it.
func sandboxDisk(t *testing.T, srv *client.Server, name string, full bool) *client.SandboxDisk {
	t.Helper()
	var d *client.SandboxDisk
	require.Eventually(t, func() bool {
		list, err := srv.List(testContext(t))
		require.NoError(t, err)
		for _, s := range list {
			if s.Name == name {
				d = s.Disk
			}
		}
		return d != nil && d.Full == full
	}, 15*time.Second, 20*time.Millisecond, "sandbox %s: disk full %v (last %+v)", name, full, d)
	return d
}

// A sandbox writing past its disk limit (--sandbox-disk, or a create's
// smaller one) gets errors (EFBIG: a shell command dies of SIGXFSZ, the
// write tool fails), the host holds no more than the limit and its slack,
// and another sandbox writes on; removing files lifts it.
func TestSandboxesDiskLimit(t *testing.T) {
	ctx := testContext(t)
	const mib = 1 << 20
	m := startMany(t, ctx, "--sandbox-disk", "24M")
	srv := client.NewServer(m.base, m.token, nil)

	_, err := srv.CreateWith(ctx, client.CreateRequest{Name: "big", From: client.FromEmpty, Disk: "1G"})
	var he *client.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode)
	assert.Contains(t, he.Detail, "above the server's limit, 24 MiB (--sandbox-disk)")

	a, err := srv.CreateWith(ctx, client.CreateRequest{Name: "a", From: client.FromWorkspace, Disk: "8M"})
	require.NoError(t, err)
	require.NotNil(t, a.Disk)
	assert.Equal(t, int64(8*mib), a.Disk.Limit)
	b, err := srv.Create(ctx, "b", client.FromEmpty)
	require.NoError(t, err)
	require.NotNil(t, b.Disk)
	assert.Equal(t, int64(24*mib), b.Disk.Limit, "the server's limit by default")
	ca, cb := srv.Sandbox("a", a.Token), srv.Sandbox("b", b.Token)

	// One file stops at the limit.
	res, err := ca.Run(ctx, "head -c 20M /dev/zero > one; echo rc=$?; wc -c < one")
	require.NoError(t, err)
	assert.Contains(t, res.Stdout, "rc=153", "killed by SIGXFSZ: %s %s", res.Stdout, res.Stderr)
	assert.Contains(t, res.Stdout, "8388608", "the file stopped at the limit")
	d := sandboxDisk(t, srv, "a", true)
	assert.Greater(t, d.Used, int64(8*mib))

	// Past the limit nothing grows: a command, and the write tool.
	res, err = ca.Run(ctx, "head -c 1M /dev/zero > two; echo rc=$?; wc -c < two")
	require.NoError(t, err)
	assert.Contains(t, res.Stdout, "rc=153")
	assert.Regexp(t, `(?m)^0$`, res.Stdout, "not a byte written")
	err = ca.WriteString(ctx, "three", "some bytes")
	require.Error(t, err, "the write tool past the limit")
	assert.Contains(t, err.Error(), "too large")

	// Many writers at once: the host holds at most the limit and its
	// slack (8 MiB for so small a limit).
	res, err = cb.Run(ctx, `for i in 1 2 3 4 5 6 7 8; do (trap '' XFSZ; head -c 8M /dev/zero > f$i) & done; wait; echo done`)
	require.NoError(t, err)
	assert.Contains(t, res.Stdout, "done")
	time.Sleep(500 * time.Millisecond)
	used := diskUse(t, b.Workspace)
	t.Logf("8 writers of 8 MiB against 24 MiB: %d MiB on the host", used/mib)
	assert.LessOrEqual(t, used, int64((24+8)*mib), "limit and slack")
	sandboxDisk(t, srv, "b", true)

	// The other sandbox writes on; a's layer is untouched by it.
	c, err := srv.Create(ctx, "c", client.FromEmpty)
	require.NoError(t, err)
	res, err = srv.Sandbox("c", c.Token).Run(ctx, "head -c 4M /dev/zero > f; wc -c < f")
	require.NoError(t, err)
	assert.Contains(t, res.Stdout, "4194304")
	assert.LessOrEqual(t, diskUse(t, a.Workspace), int64(8*mib+8*mib))

	// A command that raises its soft limit again is stopped once the
	// layer grows past the limit and the slack (8 MiB); the next call
	// gets a new boxsh-init, bound from its start.
	_, err = srv.Sandbox("c", c.Token).Run(ctx, `for i in 1 2 3 4 5 6 7 8 9 10; do ulimit -S -f 8192; head -c 8M /dev/zero > g$i; done; echo survived`)
	require.Error(t, err, "the sandbox is stopped")
	assert.Contains(t, err.Error(), "past its disk limit")
	used = diskUse(t, c.Workspace)
	t.Logf("a command raising its soft limit against 24 MiB: %d MiB on the host", used/mib)
	assert.LessOrEqual(t, used, int64((24+8+16)*mib), "limit, slack and what one reaction lets through (two files)")
	res, err = srv.Sandbox("c", c.Token).Run(ctx, "grep 'Max file size' /proc/self/limits")
	require.NoError(t, err, "a new boxsh-init")
	assert.Regexp(t, `Max file size\s+0\s+25165824`, res.Stdout)

	// Removing files lifts the bound.
	_, err = ca.Run(ctx, "rm -f one two")
	require.NoError(t, err)
	sandboxDisk(t, srv, "a", false)
	res, err = ca.Run(ctx, "head -c 1M /dev/zero > two; echo rc=$?")
	require.NoError(t, err)
	assert.Contains(t, res.Stdout, "rc=0")
}
