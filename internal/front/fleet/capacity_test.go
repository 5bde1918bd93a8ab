package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/rpc"
	"github.com/boxsh/boxsh/runtime"
)

// The descriptors a server of many sandboxes may need at their bounds:
// with the defaults, under 2^14 (a common hard limit is far above).
func TestBoundsDescriptors(t *testing.T) {
	assert.Equal(t, (10+2*3)*(4+5+runtime.ForwardConns+ownDescriptors)+serverDescriptors, Bounds{10, 3, 4, 5}.Descriptors())
	assert.Less(t, Bounds{}.Descriptors(), 1<<14)
	assert.Equal(t, Bounds{DefaultMax, 0, rpc.DefaultSandboxRequests, DefaultForwards}.Descriptors(), Bounds{}.Descriptors(), "zero fields take the defaults")
	// The HTTP connections take no more than their part of it, and leave
	// the server room of its own.
	for _, b := range []Bounds{{64, 0, 32, 32}, {1, 0, 1, 1}, {10, 3, 4, 5}} {
		sandboxesPart := (b.Max + 2*b.Warm) * (b.Forwards + runtime.ForwardConns + ownDescriptors)
		assert.LessOrEqual(t, b.HTTPConns()+sandboxesPart+100, b.Descriptors(), "%v", b)
	}
}

// A server whose descriptor limit is below what its sandboxes may use at
// their bounds is told so at start, with the figures and what to change.
func TestBoundsDescriptorWarning(t *testing.T) {
	assert.Empty(t, Bounds{}.DescriptorWarning(1<<20))
	assert.Equal(t, "boxsh: warning: 64 sandboxes at their bounds may use 9728 file descriptors, above this process's limit of 1024: raise ulimit -n or lower --max-sandboxes, --sandbox-requests or --sandbox-forwards",
		Bounds{}.DescriptorWarning(1024))
	assert.Empty(t, Bounds{Max: 3}.DescriptorWarning(1024), "3 sandboxes fit in 1024")
	assert.Contains(t, Bounds{Max: 3, Forwards: 1000}.DescriptorWarning(1024), "3 sandboxes at their bounds may use")
}
