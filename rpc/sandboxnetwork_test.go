package rpc

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client/apitype"
)

func TestApplyNetworkChange(t *testing.T) {
	cur := apitype.NetworkPolicy{Mode: "allowlist",
		Allow: []apitype.NetworkRule{{Pattern: "a.example", Source: "--allow-domain"}},
		Deny:  []apitype.NetworkRule{}}
	list := func(s ...string) *[]string { return &s }

	// An edit adds with the client as source, and keeps the others'.
	p, err := applyNetworkChange(cur, apitype.NetworkChange{AddAllow: []string{"b.example", "a.example"}, AddDeny: []string{"x.b.example"}}, "rest 1")
	require.NoError(t, err)
	assert.Equal(t, []apitype.NetworkRule{{Pattern: "a.example", Source: "--allow-domain"}, {Pattern: "b.example", Source: "rest 1"}}, p.Allow)
	assert.Equal(t, []apitype.NetworkRule{{Pattern: "x.b.example", Source: "rest 1"}}, p.Deny)

	p, err = applyNetworkChange(p, apitype.NetworkChange{RemoveAllow: []string{"a.example"}}, "rest 2")
	require.NoError(t, err)
	assert.Equal(t, []apitype.NetworkRule{{Pattern: "b.example", Source: "rest 1"}}, p.Allow)

	// A replacement keeps the sources of the patterns it keeps; a list not
	// given stays, an empty one empties.
	p, err = applyNetworkChange(p, apitype.NetworkChange{Allow: list("c.example", "b.example", "c.example")}, "rest 3")
	require.NoError(t, err)
	assert.Equal(t, []apitype.NetworkRule{{Pattern: "c.example", Source: "rest 3"}, {Pattern: "b.example", Source: "rest 1"}}, p.Allow)
	assert.Len(t, p.Deny, 1)
	p, err = applyNetworkChange(p, apitype.NetworkChange{Deny: list()}, "rest 4")
	require.NoError(t, err)
	assert.Empty(t, p.Deny)
	assert.NotNil(t, p.Deny, "[] on the wire")

	for _, c := range []apitype.NetworkChange{
		{},
		{Allow: list("a.example"), AddDeny: []string{"b.example"}},
		{RemoveDeny: []string{"nope.example"}},
	} {
		_, err := applyNetworkChange(cur, c, "rest")
		var se *SandboxError
		require.ErrorAs(t, err, &se, "%+v", c)
		assert.Equal(t, http.StatusBadRequest, se.Status)
	}
}
