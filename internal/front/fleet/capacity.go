package fleet

import (
	"cmp"
	"fmt"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/rpc"
	"github.com/boxsh/boxsh/runtime"
)

// DefaultForwards is how many ports each sandbox may expose at once by default.
const DefaultForwards = 32

// ownDescriptors bounds the descriptors the server holds for one sandbox
// besides its requests and forwards: boxsh-init's sockets and pipes, and
// its session.
const ownDescriptors = 16

// serverDescriptors bounds the descriptors of the server itself: its
// listener, logs, the /mcp and management requests, the reaper.
const serverDescriptors = 512

// Bounds are a fleet's limits that set how many descriptors it may hold.
// A zero field takes its default.
type Bounds struct {
	Max      int // sandboxes at once (DefaultMax)
	Warm     int // warm sandboxes kept ready
	Requests int // each sandbox's requests in flight (rpc.DefaultSandboxRequests)
	Forwards int // each sandbox's exposed ports (DefaultForwards)
	// Egress tells that each sandbox's network goes through an egress
	// proxy of the front's (allowlist), whose connections it holds.
	Egress bool
}

func (b Bounds) withDefaults() Bounds {
	b.Max = cmp.Or(b.Max, DefaultMax)
	b.Requests = cmp.Or(b.Requests, rpc.DefaultSandboxRequests)
	b.Forwards = cmp.Or(b.Forwards, DefaultForwards)
	return b
}

// Descriptors is how many descriptors the server may hold with every
// sandbox at its bounds.
//
// Each sandbox (warm ones included) holds its requests in flight, its
// exposed ports and the connections to them, its egress proxy's
// connections, and its own descriptors.
func (b Bounds) Descriptors() int {
	b = b.withDefaults()
	per := b.Requests + b.Forwards + runtime.ForwardConns + ownDescriptors
	if b.Egress {
		per += proxy.MaxDescriptors(0)
	}
	return MaxRunning(b.Max, b.Warm)*per + serverDescriptors
}

// HTTPConns bounds the server's HTTP connections (rpc.HTTPOptions.MaxConns).
//
// It counts each sandbox's requests in flight, those of /mcp (128) and of
// the management API (64), and room for idle kept-alive ones. It is
// within Descriptors.
func (b Bounds) HTTPConns() int {
	b = b.withDefaults()
	return MaxRunning(b.Max, b.Warm)*b.Requests + 128 + 64 + 192
}

// DescriptorWarning is the warning for a process limit of limit
// descriptors, or "" when the limit is enough.
//
// Below Descriptors, the sandboxes together, not any one of them, could
// run the server out of descriptors.
func (b Bounds) DescriptorWarning(limit uint64) string {
	b = b.withDefaults()
	need := b.Descriptors()
	if uint64(need) <= limit {
		return ""
	}
	return fmt.Sprintf("boxsh: warning: %d sandboxes at their bounds may use %d file descriptors, above this process's limit of %d: raise ulimit -n or lower --max-sandboxes, --sandbox-requests or --sandbox-forwards", b.Max, need, limit)
}

// CheckNetwork refuses a policy whose network would be shared between
// the fleet's sandboxes.
//
// Every sandbox of a fleet has a network namespace of its own, so that no
// sandbox reaches another's ports. An open network (allow_all) would be
// the host's, shared: it is refused when the policy names it, and none is
// the default.
func CheckNetwork(p policy.Policy) error {
	if mode, own := p.Network(); !own && p.NetworkMode.Value != "" {
		return fmt.Errorf("%w: --sandboxes gives every sandbox a network namespace of its own: network %s (from %s) would share the host's between them; use --network disabled or allowlist", policy.ErrUsage, mode, p.NetworkMode.Source)
	}
	return nil
}
