package runtime

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
)

// TestNetworkPolicyTool checks the network_policy tool as the front answers
// it: the mode always, and in allowlist mode the lists of the policy.
func TestNetworkPolicyTool(t *testing.T) {
	call := func(p policy.Policy) tool.NetworkPolicyOutput {
		t.Helper()
		s := &Supervisor{cfg: Config{Policy: p}}
		h, ok := frontTools.Lookup(tool.NetworkPolicy)
		require.True(t, ok, "the front handles network_policy")
		r, err := h(context.Background(), s, json.RawMessage(`{}`))
		require.NoError(t, err)
		require.False(t, r.IsError, "%+v", r.Content)
		b, err := json.Marshal(r.StructuredContent)
		require.NoError(t, err)
		var out tool.NetworkPolicyOutput
		require.NoError(t, json.Unmarshal(b, &out))
		return out
	}
	var p policy.Policy
	p.NetworkMode.Value = policy.NetworkAllowlist
	p.AllowedDomains = []policy.Rule{{Value: "github.com"}, {Value: "*.npmjs.org:443"}}
	p.DeniedDomains = []policy.Rule{{Value: "gist.github.com"}}
	assert.Equal(t, tool.NetworkPolicyOutput{Mode: "allowlist", Allowed: []string{"github.com", "*.npmjs.org:443"}, Denied: []string{"gist.github.com"}}, call(p))

	p.NetworkMode.Value = policy.NetworkDisabled
	assert.Equal(t, tool.NetworkPolicyOutput{Mode: "disabled", Allowed: []string{}, Denied: []string{}}, call(p), "no lists outside allowlist mode")
	assert.Equal(t, "allow_all", call(policy.Policy{}).Mode, "the default mode")
}
