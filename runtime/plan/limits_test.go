package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimitsResources(t *testing.T) {
	assert.Nil(t, Limits{Memory: 1 << 20}.resources(), "no cgroup")
	assert.Nil(t, Limits{Cgroup: &CgroupLimits{}}.resources(), "nothing to limit")
	r := Limits{Cgroup: &CgroupLimits{Memory: 1 << 30, Pids: 64, CPUs: 1.5}}.resources()
	require.NotNil(t, r)
	assert.Equal(t, int64(1<<30), *r.Memory.Limit)
	assert.Equal(t, int64(64), *r.Pids.Limit)
	assert.Equal(t, int64(150_000), *r.CPU.Quota)
	assert.Equal(t, uint64(100_000), *r.CPU.Period)
}
