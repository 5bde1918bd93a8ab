//go:build linux

package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The groups the test user is in for TestCowSupplementaryGroup
// (scripts/test-groups.sh, which .ci/run runs, sets them up): /etc/subgid
// lets the user map mappedTeam, not unmappedTeam.
const (
	mappedTeam   = "boxsh-team"
	unmappedTeam = "boxsh-team-unmapped"
)

// requireTeamGroup returns the gid of the supplementary group name of the
// test process. When the process has no such group, the test skips, saying
// how to set it up. In CI it fails instead, since scripts/test-groups.sh
// sets the group up there.
func requireTeamGroup(t *testing.T, name string) int {
	t.Helper()
	g, err := user.LookupGroup(name)
	if err != nil {
		requireInCI(t, fmt.Sprintf("no group %s: as root, scripts/test-groups.sh makes it and adds the test user to it (.ci/run does)", name))
	}
	gid, err := strconv.Atoi(g.Gid)
	require.NoError(t, err)
	groups, err := os.Getgroups()
	require.NoError(t, err)
	if !slices.Contains(groups, gid) {
		requireInCI(t, fmt.Sprintf("the test user is not in the group %s: as root, scripts/test-groups.sh adds it (.ci/run does)", name))
	}
	return gid
}

// subgidAllows tells whether /etc/subgid lets the test user map gid.
func subgidAllows(t *testing.T, gid int) bool {
	t.Helper()
	f, err := os.Open("/etc/subgid")
	if err != nil {
		return false
	}
	defer f.Close()
	u, err := user.Current()
	require.NoError(t, err)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) != 3 || fields[0] != u.Username && fields[0] != u.Uid {
			continue
		}
		start, err1 := strconv.Atoi(fields[1])
		count, err2 := strconv.Atoi(fields[2])
		if err1 == nil && err2 == nil && gid >= start && gid < start+count {
			return true
		}
	}
	return false
}

// teamTree makes a directory SRC of the group gid (set-group-ID, as a team
// shares a repository) holding file, group-writable, and returns SRC.
func teamTree(t *testing.T, gid int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, os.Mkdir(src, 0o755))
	require.NoError(t, os.Chown(src, -1, gid))
	require.NoError(t, os.Chmod(src, 0o775|os.ModeSetgid))
	f := filepath.Join(src, "file")
	require.NoError(t, os.WriteFile(f, []byte("base\n"), 0o664))
	require.NoError(t, os.Chown(f, -1, gid))
	return src
}

// TestCowSupplementaryGroup changes, through a cow bind, a file of one of
// the user's supplementary groups:
//   - Where /etc/subgid lets the user map the group (with newgidmap), the
//     sandbox maps it. The change works and the file keeps its group, while
//     root in the sandbox still cannot drop its groups (setgroups).
//   - Where not, boxsh refuses to start, with one line naming the file, its
//     group and the fix. Otherwise the change would fail with EOVERFLOW
//     ("Value too large for defined data type").
func TestCowSupplementaryGroup(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	t.Run("mapped", func(t *testing.T) {
		gid := requireTeamGroup(t, mappedTeam)
		if _, err := exec.LookPath("newgidmap"); err != nil {
			requireInCI(t, "newgidmap is not installed (Debian: apt-get install uidmap; scripts/test-groups.sh does)")
		}
		if !subgidAllows(t, gid) {
			requireInCI(t, fmt.Sprintf("/etc/subgid does not let the test user map the group %s (scripts/test-groups.sh adds the line)", mappedTeam))
		}
		src := teamTree(t, gid)
		dst := filepath.Join(filepath.Dir(src), "dst")
		r := sandboxShell(t, t.TempDir(), []string{"--bind", "cow:" + src + ":" + dst},
			`echo x >> `+dst+`/file && stat -c 'group %g' `+dst+`/file; setpriv --clear-groups true 2>/dev/null || echo "setgroups refused"`)
		require.Equal(t, 0, r.code(), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
		assert.Equal(t, "group "+strconv.Itoa(gid)+"\nsetgroups refused\n", r.stdout)
		got, err := os.ReadFile(filepath.Join(dst, "file"))
		require.NoError(t, err)
		assert.Equal(t, "base\nx\n", string(got))
		got, err = os.ReadFile(filepath.Join(src, "file"))
		require.NoError(t, err)
		assert.Equal(t, "base\n", string(got), "SRC is unchanged")
	})
	t.Run("unmapped", func(t *testing.T) {
		gid := requireTeamGroup(t, unmappedTeam)
		require.False(t, subgidAllows(t, gid), "/etc/subgid must not let the test user map %s", unmappedTeam)
		src := teamTree(t, gid)
		dst := filepath.Join(filepath.Dir(src), "dst")
		want := "belongs to the group " + unmappedTeam + " (gid " + strconv.Itoa(gid) + "), which the sandbox's user namespace does not map"
		r := sandboxShell(t, t.TempDir(), []string{"--bind", "cow:" + src + ":" + dst}, `echo x >> `+dst+`/file; echo ran`)
		require.NotEqual(t, 0, r.code(), "stdout: %s", r.stdout)
		assert.NotContains(t, r.stdout, "ran")
		first := firstLine(r.stderr)
		assert.True(t, strings.HasPrefix(first, "boxsh: "), first)
		assert.Contains(t, first, src)
		assert.Contains(t, first, want)
		assert.Contains(t, first, "/etc/subgid")

		// --try in the directory: the same line.
		r = runBoxshIn(t, testContext(t), src, "", nil, "--try", "-c", "echo x >> file; echo ran")
		require.NotEqual(t, 0, r.code(), "stdout: %s", r.stdout)
		assert.NotContains(t, r.stdout, "ran")
		assert.Contains(t, firstLine(r.stderr), want)
	})
}
