package runtime

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/internal/tool"
)

// TestSecretUses checks the counts of sandbox_stats: allowed requests
// only, by secret and host, bounded.
func TestSecretUses(t *testing.T) {
	u := &secretUses{}
	var told int
	rec := u.decided(func(proxy.Decision) { told++ })
	rec(proxy.Decision{Host: "api.github.com", Allowed: true, Secrets: []string{"GH_TOKEN"}})
	rec(proxy.Decision{Host: "api.github.com", Allowed: true, Secrets: []string{"GH_TOKEN", "OTHER"}})
	rec(proxy.Decision{Host: "evil.example", Allowed: false, Secrets: []string{"GH_TOKEN"}})
	rec(proxy.Decision{Host: "plain.example", Allowed: true})
	assert.Equal(t, 4, told, "every decision goes on")
	assert.Equal(t, []tool.SecretUse{{Secret: "GH_TOKEN", Host: "api.github.com", Requests: 2}, {Secret: "OTHER", Host: "api.github.com", Requests: 1}}, u.stats())
	for i := range 2 * maxSecretUses {
		rec(proxy.Decision{Host: fmt.Sprintf("h%d.example", i), Allowed: true, Secrets: []string{"GH_TOKEN"}})
	}
	assert.Len(t, u.stats(), maxSecretUses, "bounded")
	var none *secretUses
	assert.Nil(t, none.stats())
}
