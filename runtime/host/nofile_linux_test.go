package host

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The limit of open files a sandbox gets is the one boxsh was started
// with, not the one the Go runtime raised it to as it started.
func TestStartNoFile(t *testing.T) {
	if os.Getenv("BOXSH_TEST_NOFILE_CHILD") != "" {
		s, c := startNoFile(), currentNoFile()
		fmt.Printf("start %d:%d now %d:%d\n", s.Soft, s.Hard, c.Soft, c.Hard)
		return
	}
	var r unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &r))
	if r.Max < 1001 {
		t.Skipf("the hard limit of open files is %d: no lower soft limit to start with", r.Max)
	}
	cmd := exec.Command("/bin/sh", "-c", `ulimit -Sn 1000 && exec "$0" -test.run='^TestStartNoFile$'`, os.Args[0])
	cmd.Env = append(os.Environ(), "BOXSH_TEST_NOFILE_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), fmt.Sprintf("start 1000:%d now %d:%d\n", r.Max, r.Max-1, r.Max),
		"the soft limit as started, though Go raised it")
}

func TestGatherHostFactsNoFile(t *testing.T) {
	h := gatherHostFacts()
	require.NotNil(t, h.NoFile)
	assert.Equal(t, startNoFile(), h.NoFile)
}
