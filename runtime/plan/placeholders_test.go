package plan

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
)

// Each placeholder of a missing protected file holds what its readers
// take for nothing: MCP clients read an .mcp.json of no servers, git an
// empty .gitmodules (no submodules) and a commondir of "." (the git
// directory itself).
func TestPlaceholderContents(t *testing.T) {
	var mcp struct {
		MCPServers map[string]any `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(PlaceholderContent(".mcp.json")), &mcp), "valid JSON")
	assert.NotNil(t, mcp.MCPServers, "an mcpServers object")
	assert.Empty(t, mcp.MCPServers, "of no servers")
	assert.Empty(t, PlaceholderContent(".gitmodules"), "an empty .gitmodules")
	assert.Equal(t, ".", PlaceholderContent("commondir"))
	if git, err := exec.LookPath("git"); err == nil {
		f := filepath.Join(t.TempDir(), ".gitmodules")
		require.NoError(t, os.WriteFile(f, []byte(PlaceholderContent(".gitmodules")), 0o444))
		out, err := exec.Command(git, "config", "-f", f, "--list").CombinedOutput()
		assert.NoError(t, err, "git reads the placeholder: %s", out)
		assert.Empty(t, string(out), "and finds no submodule")
	}
	assert.Equal(t, map[string]string{"commondir": ".", "mcp.json": PlaceholderContent(".mcp.json")}, PlaceholderFiles())
	assert.Equal(t, "mcp.json", placeholderName(HostPath{Path: "/p/.mcp.json", Missing: true, Content: PlaceholderContent(".mcp.json")}))
	assert.Equal(t, "file", placeholderName(HostPath{Path: "/p/.gitmodules", Missing: true}))
	assert.Equal(t, "dir", placeholderName(HostPath{Path: "/p/.vscode", Missing: true, Dir: true}))
}

// The sandbox's git is told of the file placeholders outside git
// directories, after the GIT_CONFIG entries the environment has.
func TestPlaceholderExcludes(t *testing.T) {
	protect := []HostPath{
		{Path: "/p/.mcp.json", Missing: true},
		{Path: "/p/sub/.mcp.json", Missing: true},
		{Path: "/p/.gitmodules", Missing: true},
		{Path: "/p/.vscode", Missing: true, Dir: true},
		{Path: "/p/.git/commondir", Missing: true},
		{Path: "/p/.bashrc"},
	}
	assert.Equal(t, "# boxsh: the placeholders of missing protected files\n.gitmodules\n.mcp.json\n", PlaceholderExcludes(protect))
	assert.Empty(t, PlaceholderExcludes(protect[3:]), "no file placeholder outside .git")
	assert.Equal(t, []string{"PATH=/bin", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.excludesFile", "GIT_CONFIG_VALUE_0=" + initproto.GitExcludesPath},
		gitExcludesEnv([]string{"PATH=/bin"}))
	assert.Equal(t, []string{"GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=me", "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_1=core.excludesFile", "GIT_CONFIG_VALUE_1=" + initproto.GitExcludesPath},
		gitExcludesEnv([]string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=me"}), "after the user's own")
}
