package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/rpc"
	"github.com/boxsh/boxsh/runtime"
)

// The descriptors a server of many sandboxes may need at their bounds:
// with the defaults, under 2^14 (a common hard limit is far above).
func TestBoundsDescriptors(t *testing.T) {
	assert.Equal(t, (10+2*3)*(4+5+runtime.ForwardConns+ownDescriptors)+serverDescriptors, Bounds{Max: 10, Warm: 3, Requests: 4, Forwards: 5}.Descriptors())
	assert.Less(t, Bounds{}.Descriptors(), 1<<14)
	assert.Equal(t, Bounds{Max: DefaultMax, Requests: rpc.DefaultSandboxRequests, Forwards: DefaultForwards}.Descriptors(), Bounds{}.Descriptors(), "zero fields take the defaults")
	// The HTTP connections take no more than their part of it, and leave
	// the server room of its own.
	for _, b := range []Bounds{{Max: 64, Requests: 32, Forwards: 32}, {Max: 1, Requests: 1, Forwards: 1}, {Max: 10, Warm: 3, Requests: 4, Forwards: 5}} {
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
	assert.Contains(t, Bounds{Max: 3, Egress: true}.DescriptorWarning(1024), "3 sandboxes at their bounds may use", "their egress proxies' connections count")
}

// Each sandbox's egress proxy holds its connections, both ends of each and
// the pipes of their splices: an allowlist fleet counts them.
func TestBoundsDescriptorsEgress(t *testing.T) {
	b := Bounds{Max: 10, Warm: 3, Requests: 4, Forwards: 5}
	withEgress := b
	withEgress.Egress = true
	assert.Equal(t, b.Descriptors()+(10+2*3)*proxy.MaxDescriptors(0), withEgress.Descriptors())
	assert.GreaterOrEqual(t, proxy.MaxDescriptors(0), 2*proxy.DefaultMaxConns, "both ends of every connection")
	// docs/security.md's figure for the defaults.
	assert.Equal(t, 112_128, Bounds{Egress: true}.Descriptors())
}
