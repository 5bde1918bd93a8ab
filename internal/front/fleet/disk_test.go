package fleet

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/rpc"
)

func TestDiskLimitOfCreate(t *testing.T) {
	m := &Manager{cfg: Config{Disk: 1 << 30}}
	n, err := m.diskLimit(apitype.SandboxRequest{Name: "a"})
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), n, "the server's by default")
	n, err = m.diskLimit(apitype.SandboxRequest{Name: "a", Disk: "512M"})
	require.NoError(t, err)
	assert.Equal(t, int64(512<<20), n)
	for disk, msg := range map[string]string{
		"2G":   "sandbox a: disk 2G is above the server's limit, 1 GiB (--sandbox-disk)",
		"lots": `sandbox a: disk: expected a size such as 512M or 2G, got "lots"`,
	} {
		_, err = m.diskLimit(apitype.SandboxRequest{Name: "a", Disk: disk})
		var se *rpc.SandboxError
		require.True(t, errors.As(err, &se), disk)
		assert.Equal(t, http.StatusBadRequest, se.Status)
		assert.Equal(t, msg, se.Msg)
	}
	n, err = (&Manager{}).diskLimit(apitype.SandboxRequest{Name: "a", Disk: "5T"})
	require.NoError(t, err, "no bound without --sandbox-disk")
	assert.Equal(t, int64(5<<40), n)
}
