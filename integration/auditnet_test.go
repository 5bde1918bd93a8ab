//go:build linux

package integration

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// TestAuditNetworkDecisions checks that the proxy's decisions go to the
// same log.
func TestAuditNetworkDecisions(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	addrs := fakeInternet(t, "registry.npmjs.org", "evil.example.org")
	port := strings.Split(addrs["registry.npmjs.org"], ":")[1]
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	r := runBoxsh(t, ctx, "", "--sandbox", "--network", "allowlist", "--allow-domain", "registry.npmjs.org", "--audit", path,
		"-c", "curl -sS --max-time 10 http://registry.npmjs.org:"+port+"/ok; curl -sS --max-time 10 http://evil.example.org:"+port+"/no")
	assert.Contains(t, r.stdout, "hello from registry.npmjs.org /ok", r.stderr)
	var network []tool.AuditEntry
	for _, e := range readAudit(t, path) {
		if e.Kind == tool.AuditNetwork {
			network = append(network, e)
		}
	}
	require.Len(t, network, 2)
	assert.Equal(t, "registry.npmjs.org", network[0].Host)
	assert.Equal(t, port, strconv.Itoa(network[0].Port))
	assert.Equal(t, "http", network[0].Protocol)
	assert.True(t, *network[0].Allowed)
	assert.Equal(t, "registry.npmjs.org", network[0].Rule)
	assert.Equal(t, "evil.example.org", network[1].Host)
	assert.False(t, *network[1].Allowed)
	r = runBoxsh(t, ctx, "", "audit", path)
	assert.Contains(t, r.stdout, " network http evil.example.org:"+port+" refused\n")
}
