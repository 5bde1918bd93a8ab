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
