package proc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindForkServer(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	lib := filepath.Join(root, "lib", "boxsh")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.MkdirAll(lib, 0o755))
	init := filepath.Join(bin, "boxsh-init")
	require.NoError(t, os.WriteFile(init, nil, 0o755))

	assert.Empty(t, FindForkServer(init), "none installed")

	inLib := filepath.Join(lib, ForkServerName)
	require.NoError(t, os.WriteFile(inLib, nil, 0o644))
	assert.Equal(t, inLib, FindForkServer(init), "in ../lib/boxsh")

	beside := filepath.Join(bin, ForkServerName)
	require.NoError(t, os.WriteFile(beside, nil, 0o644))
	assert.Equal(t, beside, FindForkServer(init), "beside boxsh-init first")

	// A link to boxsh-init finds the library of the boxsh-init it links to.
	other := t.TempDir()
	link := filepath.Join(other, "boxsh-init")
	require.NoError(t, os.Symlink(init, link))
	real, err := filepath.EvalSymlinks(beside)
	require.NoError(t, err)
	assert.Equal(t, real, FindForkServer(link))

	// A directory of that name is not the library.
	require.NoError(t, os.Remove(beside))
	require.NoError(t, os.Mkdir(beside, 0o755))
	assert.Equal(t, inLib, FindForkServer(init))
}
