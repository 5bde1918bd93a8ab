package session

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProtectedReason(t *testing.T) {
	for _, p := range []string{".bashrc", "a/b/.bashrc", ".git/config", "x/.git/hooks/pre-push", ".git/hooks", ".claude/settings.json", "p/.cursor/rules", ".devcontainer", ".boxsh/policy.json", "w/.git/worktrees/a/gitdir", ".vscode/tasks.json", "sub/.git"} {
		_, ok := protectedReason(p, nil)
		require.True(t, ok, p)
	}
	for _, p := range []string{"README", ".git/objects/ab", ".gitignore", "src/.bashrc.bak", "a.git/config", "Makefile"} {
		_, ok := protectedReason(p, nil)
		require.False(t, ok, p)
	}
	_, ok := protectedReason("sub/Makefile", []string{"Makefile"})
	require.True(t, ok, "an extra entry")
}
