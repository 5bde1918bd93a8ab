package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

func TestResolveTry(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	cwd, home := filepath.Join(base, "proj"), filepath.Join(base, "home")
	require.NoError(t, os.Mkdir(cwd, 0o755))
	require.NoError(t, os.Mkdir(home, 0o755))

	sb, changes, err := ResolveTry(policy.Sandbox{Try: true}, cwd, home)
	require.NoError(t, err)
	assert.True(t, sb.Enabled)
	assert.False(t, sb.Try, "resolved")
	assert.True(t, sb.HostSystem, "/etc, /var and /run of the host")
	assert.Equal(t, "work", filepath.Base(changes))
	assert.True(t, strings.HasPrefix(filepath.Base(filepath.Dir(changes)), ".boxsh-try-"), changes)
	assert.Equal(t, base, filepath.Dir(filepath.Dir(changes)), "next to the working directory")
	assert.DirExists(t, changes)
	assert.Equal(t, []policy.Bind{
		{Mode: policy.ReadOnly, Src: home, Dst: home},
		{Mode: policy.CopyOnWrite, Src: cwd, Dst: changes},
	}, sb.Binds)
	assert.Equal(t, changes, plan.SandboxCwd(sb, plan.HostFacts{}, cwd), "the shell starts in the merged view")

	// The home directory is not bound again when the command line binds it,
	// nor when it is the working directory or inside it.
	sb, _, err = ResolveTry(policy.Sandbox{Try: true, Binds: []policy.Bind{{Mode: policy.ReadWrite, Src: home, Dst: home}}}, cwd, home)
	require.NoError(t, err)
	assert.Len(t, sb.Binds, 2)
	sb, _, err = ResolveTry(policy.Sandbox{Try: true}, cwd, cwd)
	require.NoError(t, err)
	assert.Len(t, sb.Binds, 1)

	_, _, err = ResolveTry(policy.Sandbox{Try: true}, "/", home)
	assert.True(t, errors.Is(err, policy.ErrBind), "%v", err)

	sb, changes, err = ResolveTry(policy.Sandbox{Enabled: true}, cwd, home)
	require.NoError(t, err)
	assert.Empty(t, changes, "no --try: nothing to do")
	assert.Empty(t, sb.Binds)
}

func TestRemoveCowWorkDirs(t *testing.T) {
	base := t.TempDir()
	b := policy.Bind{Mode: policy.CopyOnWrite, Src: filepath.Join(base, "src"), Dst: filepath.Join(base, "dst")}
	require.NoError(t, prepareCowDirs([]policy.Bind{b}))
	_, work := plan.CowDirs(b)
	require.NoError(t, os.Mkdir(filepath.Join(work, "work"), 0)) // as the kernel leaves it
	RemoveCowWorkDirs([]policy.Bind{b, {Mode: policy.ReadOnly, Src: base, Dst: base}})
	assert.NoDirExists(t, filepath.Join(base, ".boxsh"))
	assert.DirExists(t, b.Dst, "the changes stay")
}

// TestPlaceholdersHeld checks that a placeholder another sandbox holds is
// left in place, and removed once it is released.
func TestPlaceholdersHeld(t *testing.T) {
	home := t.TempDir()
	hp := plan.HostPath{Path: filepath.Join(home, ".zshrc"), Missing: true, MissingFrom: filepath.Join(home, ".zshrc")}
	require.NoError(t, os.WriteFile(hp.Path, nil, 0o644)) // the mount point the runtime left
	held := holdPlaceholders([]plan.HostPath{hp})
	require.Len(t, held, 1)
	removePlaceholders([]plan.HostPath{hp})
	assert.FileExists(t, hp.Path, "in use by a running sandbox")
	held[0].Close()
	removePlaceholders([]plan.HostPath{hp})
	assert.NoFileExists(t, hp.Path)
}
