package proc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimitsRoundTrip(t *testing.T) {
	for _, l := range []Limits{{Data: 64 << 20}, {Procs: 50}, {Data: 1, Procs: 2}} {
		back, err := ParseLimits(l.String())
		require.NoError(t, err, l.String())
		assert.Equal(t, l, back)
	}
	for _, bad := range []string{"", "data=", "data=-1", "nproc=x", "stack=1", "data"} {
		_, err := ParseLimits(bad)
		assert.Error(t, err, bad)
	}
}

func TestLimitsWrap(t *testing.T) {
	argv := []string{"/bin/sh", "-c", "echo hi"}
	assert.Equal(t, argv, Limits{}.Wrap("/init", argv), "no limits: run as is")
	assert.Equal(t, []string{"/init", "--limits", "data=1024,nproc=9", "--", "/bin/sh", "-c", "echo hi"},
		Limits{Data: 1024, Procs: 9}.Wrap("/init", argv))
}
