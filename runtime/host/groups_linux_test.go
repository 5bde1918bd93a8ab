package host

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A user's lines of /etc/subgid name it by name or by uid; other users'
// lines and malformed ones count for nothing.
func TestSubgidRanges(t *testing.T) {
	u, err := user.Current()
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "subgid")
	require.NoError(t, os.WriteFile(p, []byte(
		u.Username+":100000:65536\n"+
			"someone-else:1003:1\n"+
			u.Uid+":1004:1\n"+
			u.Username+":1005\n"+
			u.Username+":x:1\n"), 0o644))
	uid, err := strconv.Atoi(u.Uid)
	require.NoError(t, err)
	ranges := subgidRanges(p, uid)
	assert.Equal(t, []idRange{{100000, 65536}, {1004, 1}}, ranges)
	for id, want := range map[uint32]bool{100000: true, 165535: true, 165536: false, 1003: false, 1004: true, 1005: false} {
		assert.Equal(t, want, inRanges(id, ranges), "gid %d", id)
	}
	assert.Empty(t, subgidRanges(filepath.Join(t.TempDir(), "none"), uid))
}

// findUnmappedGroup finds a file of an unmapped group deep in a tree, and a
// file of the caller's with a group the namespace does not map.
//
// It finds nothing in a tree of mapped groups, and finds SRC itself when SRC
// is such a file.
func TestFindUnmappedGroup(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	src := t.TempDir()
	deep := filepath.Join(src, "a", "b", "c")
	require.NoError(t, os.MkdirAll(deep, 0o750))
	for _, d := range []string{src, filepath.Join(src, "a"), deep} {
		for i := range 50 {
			require.NoError(t, os.WriteFile(filepath.Join(d, "f"+strconv.Itoa(i)), nil, 0o640))
		}
	}
	require.NoError(t, os.Symlink("/", filepath.Join(deep, "root")))
	ok := map[uint32]bool{uint32(gid): true}

	p, _, err := findUnmappedGroup(src, uid, ok, []uint32{uint32(gid) + 1})
	require.NoError(t, err)
	assert.Empty(t, p, "a tree of the caller's group only")

	p, g, err := findUnmappedGroup(src, uid, map[uint32]bool{}, nil)
	require.NoError(t, err)
	assert.Equal(t, src, p, "SRC is the caller's with a group not mapped")
	assert.Equal(t, uint32(gid), g)

	file := filepath.Join(deep, "f7")
	p, _, err = findUnmappedGroup(file, uid, ok, nil)
	require.NoError(t, err)
	assert.Empty(t, p, "a file SRC of the caller's group")
	p, _, err = findUnmappedGroup(file, uid, map[uint32]bool{}, nil)
	require.NoError(t, err)
	assert.Equal(t, file, p, "a file SRC with a group not mapped")

	_, _, err = findUnmappedGroup(filepath.Join(src, "missing"), uid, ok, nil)
	assert.Error(t, err)

	// A supplementary group of the caller, unmapped, on one file deep down.
	var other int
	groups, err := os.Getgroups()
	require.NoError(t, err)
	for _, g := range groups {
		if g != gid {
			other = g
		}
	}
	if other == 0 {
		t.Skip("the user has no supplementary group to give a file (scripts/test-groups.sh adds them)")
	}
	require.NoError(t, os.Chown(file, -1, other))
	p, g, err = findUnmappedGroup(src, uid, ok, []uint32{uint32(other)})
	require.NoError(t, err)
	assert.Equal(t, file, p)
	assert.Equal(t, uint32(other), g)
}
