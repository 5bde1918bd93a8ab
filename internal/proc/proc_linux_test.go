package proc

import (
	"os"
	"os/exec"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChildrenListings(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	byStat := childrenByStat(os.Getpid())
	assert.Contains(t, byStat, cmd.Process.Pid)
	kids := Children()
	assert.Contains(t, kids, cmd.Process.Pid)
	sort.Ints(byStat)
	sort.Ints(kids)
	assert.Equal(t, byStat, kids, "both ways of listing children agree")
}
