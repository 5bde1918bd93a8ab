package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProxyEnv(t *testing.T) {
	env := withProxyEnv([]string{"PATH=/bin", "http_proxy=http://evil:1", "HOME=/h"})
	assert.Contains(t, env, "HTTP_PROXY=http://127.0.0.1:3128")
	assert.Contains(t, env, "https_proxy=http://127.0.0.1:3128")
	assert.Contains(t, env, "ALL_PROXY=socks5h://127.0.0.1:3128")
	assert.Contains(t, env, "NO_PROXY=localhost,127.0.0.1,::1")
	assert.NotContains(t, env, "http_proxy=http://evil:1", "the caller's proxy settings are replaced")
	assert.Contains(t, env, "PATH=/bin")
}
