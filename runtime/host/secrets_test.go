package host

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

// TestPrepareSecrets checks that each start makes new stand-ins, puts
// them in the environment in place of the variables, and gives the proxy
// the values.
func TestPrepareSecrets(t *testing.T) {
	const value = "ghp_0123456789abcdefABCDEF"
	p := policy.Policy{
		NetworkMode: policy.Value[string]{Value: policy.NetworkAllowlist, Source: "--secret"},
		Secrets:     []policy.Secret{{SecretSetting: policy.SecretSetting{Env: "GH_TOKEN", Hosts: []string{"api.github.com"}}, Source: "--secret"}},
	}
	getenv := func(name string) (string, bool) {
		return map[string]string{"GH_TOKEN": value}[name], name == "GH_TOKEN"
	}
	a, err := PrepareSecrets(p, getenv)
	require.NoError(t, err)
	b, err := PrepareSecrets(p, getenv)
	require.NoError(t, err)
	require.Len(t, a.Env, 1)
	assert.NotEqual(t, a.Env, b.Env, "a stand-in per start")
	standIn := strings.TrimPrefix(a.Env[0], "GH_TOKEN=")
	assert.NotEqual(t, value, standIn)

	env := WithEnv([]string{"PATH=/bin", "GH_TOKEN=" + value, "GH_TOKEN_OTHER=x"}, a.Env)
	assert.Equal(t, []string{"PATH=/bin", "GH_TOKEN_OTHER=x", "GH_TOKEN=" + standIn}, env, "the stand-in replaces a passed value")

	h := http.Header{"Authorization": {"Bearer " + standIn}}
	used, leak := a.Proxy.Put("api.github.com", 443, h, &url.URL{Path: "/"})
	require.Nil(t, leak)
	assert.Equal(t, []string{"GH_TOKEN"}, used)
	assert.Equal(t, "Bearer "+value, h.Get("Authorization"))

	none, err := PrepareSecrets(policy.Policy{}, getenv)
	require.NoError(t, err)
	assert.Nil(t, none.Proxy)
	assert.Nil(t, none.Env)

	for name, c := range map[string]struct {
		p      policy.Policy
		getenv func(string) (string, bool)
		want   string
	}{
		"unset":     {p, func(string) (string, bool) { return "", false }, "secret GH_TOKEN (--secret): $GH_TOKEN is not set in boxsh's environment"},
		"empty":     {p, func(string) (string, bool) { return "", true }, "$GH_TOKEN is not set"},
		"too short": {p, func(string) (string, bool) { return "ghp_abc", true }, "fewer than the 12"},
		"allow_all": {policy.Policy{Secrets: p.Secrets}, getenv, "secret GH_TOKEN (--secret) needs the allowlist network mode, not allow_all"},
		"file":      {policy.Policy{SecretFiles: []policy.SecretFile{{SecretFileSetting: policy.SecretFileSetting{Path: "/x/.npmrc", Hosts: []string{"a.example"}}, Source: "--secret-file"}}}, getenv, "secret file /x/.npmrc (--secret-file) needs the allowlist network mode"},
	} {
		_, err := PrepareSecrets(c.p, c.getenv)
		assert.ErrorContains(t, err, c.want, name)
		assert.True(t, errors.Is(err, policy.ErrUsage), name)
		if err != nil {
			assert.NotContains(t, err.Error(), value, name)
		}
	}
}

// TestPrepareSecretsFileKinds checks that a secret file or a CA file that
// is not a regular file is refused at once, a FIFO among them (which a
// blocking open would wait on for ever), and so is one too large.
func TestPrepareSecretsFileKinds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, ".npmrc")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	large := filepath.Join(dir, "large", ".netrc")
	require.NoError(t, os.MkdirAll(filepath.Dir(large), 0o700))
	require.NoError(t, os.WriteFile(large, bytes.Repeat([]byte("#"), maxSecretFile+1), 0o600))
	network := policy.Value[string]{Value: policy.NetworkAllowlist, Source: "--secret-file"}
	secretFile := func(path string) policy.Policy {
		return policy.Policy{NetworkMode: network, SecretFiles: []policy.SecretFile{{SecretFileSetting: policy.SecretFileSetting{Path: path, Hosts: []string{"registry.example"}}, Source: "--secret-file"}}}
	}
	caFile := func(path string) policy.Policy {
		p := policy.Policy{NetworkMode: network, Requests: []policy.Rule{{Value: "GET https://registry.example/", Source: "--allow-request"}}}
		p.CAFiles = []policy.Rule{{Value: path, Source: "--ca-file"}}
		return p
	}
	for name, c := range map[string]struct {
		p    policy.Policy
		want string
	}{
		"fifo":         {secretFile(fifo), "secret file " + fifo + " (--secret-file): not a regular file (p"},
		"directory":    {secretFile(dir), "not a regular file (d"},
		"large":        {secretFile(large), fmt.Sprintf("larger than %d bytes", maxSecretFile)},
		"missing":      {secretFile(filepath.Join(dir, "none", ".npmrc")), "no such file"},
		"fifo CA":      {caFile(fifo), "CA file " + fifo + " (--ca-file): not a regular file (p"},
		"directory CA": {caFile(dir), "CA file " + dir + " (--ca-file): not a regular file (d"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := PrepareSecrets(c.p, func(string) (string, bool) { return "", false })
			done <- err
		}()
		select {
		case err := <-done:
			assert.ErrorContains(t, err, c.want, name)
			assert.True(t, errors.Is(err, policy.ErrUsage), name)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: PrepareSecrets still waits after 10s", name)
		}
	}
}
