package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

func TestCheckCache(t *testing.T) {
	f := newProtectFixture(t)
	home := f.at("home")
	f.mkdir("home/.config/boxsh", "home/.local/share", "home/.cache/ci/go-mod/x@v1/.vscode", "home/.cache/ci/npm/_cacache",
		"home/.cache/ci/pip", "home/src/p/.git/hooks", "home/.ssh/c")
	f.write("home/src/p/.git/config", "")
	for dir, says := range map[string]string{
		"home/.config/boxsh": "boxsh's own settings in " + f.at("home/.config/boxsh"),
		"home/.config":       "boxsh's own settings",
		"home":               "the home directory " + home,
		"":                   "the home directory",
		"home/src":           f.at("home/src/p/.git/config"),
		"home/src/p/.git":    f.at("home/src/p/.git/config"),
		"home/.local":        f.at("home/.local/bin") + " (on PATH before /usr/bin",
		"home/.ssh/c":        ".ssh/",
	} {
		err := checkCache(policy.Sandbox{Cache: f.at(dir)}, home, nil)
		require.ErrorIs(t, err, policy.ErrBind, dir)
		assert.ErrorContains(t, err, "--cache "+f.at(dir)+" would let the sandbox write", dir)
		assert.ErrorContains(t, err, says, dir)
	}
	assert.ErrorContains(t, checkCache(policy.Sandbox{Cache: f.at("home/.cache/ci")}, home, []string{"pip/"}), f.at("home/.cache/ci/pip")+" (protected by the policy", "the policy's entries")
	assert.NoError(t, checkCache(policy.Sandbox{Cache: f.at("home/.cache/ci")}, home, nil),
		"a cache of its own, whose module caches are not looked into")
	assert.NoError(t, checkCache(policy.Sandbox{Binds: []policy.Bind{wrBind(f.at("home/.config"))}}, home, nil), "no --cache")
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(f.at("home/.config"), link))
	assert.ErrorContains(t, checkCache(policy.Sandbox{Cache: link}, home, nil), "--cache "+link+" is a symbolic link or under one (to "+f.at("home/.config")+")")
	sb, err := ResolveSandbox(policy.Sandbox{Cache: link}, policy.Policy{}, home, home)
	require.NoError(t, err)
	assert.ErrorContains(t, checkCache(sb, home, nil), "--cache "+f.at("home/.config")+" would let the sandbox write boxsh's own settings", "the flag's links resolved")

	// The state directory, with the binds.
	run := filepath.Join(t.TempDir(), "run")
	err = stateHidden(policy.Sandbox{Cache: run}, filepath.Join(run, "boxsh"))
	assert.ErrorContains(t, err, "--cache "+run+" would let the sandbox write into boxsh's state directory")
}
