package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

func TestWritableBy(t *testing.T) {
	assert.Nil(t, writableBy(policy.Sandbox{Binds: []policy.Bind{{Mode: policy.ReadWrite, Src: "/p", Dst: "/p"}}}), "no sandbox: nothing is the sandbox's")
	w := writableBy(policy.Sandbox{Enabled: true, Binds: []policy.Bind{
		{Mode: policy.ReadWrite, Src: "/p", Dst: "/p"},
		{Mode: policy.ReadOnly, Src: "/ro", Dst: "/ro"},
		{Mode: policy.CopyOnWrite, Src: "/src", Dst: "/dst"},
	}})
	for p, want := range map[string]bool{"/p": true, "/p/x.json": true, "/px.json": false, "/ro/x.json": false, "/src/x.json": false, "/dst/x.json": true} {
		assert.Equal(t, want, w(p), p)
	}
}

func TestPolicyTrustCommands(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	file := filepath.Join(project, ".boxsh", "policy.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte(`{"filesystem": {"allowRead": [".env"]}}`), 0o644))
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runPolicy(args, project, home, &out, &errb)
		return code, out.String(), errb.String()
	}

	code, out, errs := run("show")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "not trusted (narrows only):")
	assert.Contains(t, errs, `ignored filesystem.allowRead [".env"]`)

	code, out, errs = run("trust")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "trusted "+file)
	code, out, _ = run("trusted")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, file)
	code, _, errs = run("show")
	assert.Equal(t, 0, code)
	assert.Empty(t, errs)

	code, _, errs = run("trust", "a", "b")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "takes one settings file")
	code, _, errs = run("trust", filepath.Join(project, "missing.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "missing.json")

	code, out, _ = run("untrust", file)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "untrusted "+file)
	code, out, _ = run("trusted")
	assert.Equal(t, 0, code)
	assert.Equal(t, "no trusted settings files\n", out)
}

// TestPolicyShowNetwork checks that policy show prints the network's
// settings, each with its source.
func TestPolicyShowNetwork(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	file := filepath.Join(t.TempDir(), "network.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"network": {"mode": "allowlist", "allowedDomains": ["github.com"], "deniedDomains": ["gist.github.com"]}}`), 0o644))
	show := func(args ...string) string {
		var out, errb bytes.Buffer
		require.Equal(t, 0, runPolicy(append([]string{"show"}, args...), project, home, &out, &errb), errb.String())
		return out.String()
	}
	out := show("--policy", file)
	assert.Regexp(t, `\nnetwork\.mode:\n  allowlist\s+`+regexp.QuoteMeta(file)+`\n`, out)
	assert.Regexp(t, `\nnetwork\.allowedDomains:\n  github\.com\s+`+regexp.QuoteMeta(file)+`\n`, out)
	assert.Regexp(t, `\nnetwork\.deniedDomains:\n  gist\.github\.com\s+`+regexp.QuoteMeta(file)+`\n`, out)

	out = show()
	assert.Regexp(t, `\nnetwork\.mode:\n  allow_all\s+default\n`, out, "the host's network unless a setting or flag says otherwise")
	assert.Contains(t, out, "\nnetwork.allowedDomains:\n  (none)\n")
	out = show("--allow-domain", "proxy.golang.org")
	assert.Regexp(t, `\nnetwork\.mode:\n  allowlist\s+--allow-domain\n`, out, "an allowed domain makes it the allowlist")
	assert.Regexp(t, `\n  proxy\.golang\.org\s+--allow-domain\n`, out)
}
