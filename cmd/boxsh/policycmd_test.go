package main

import (
	"bytes"
	"os"
	"path/filepath"
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
