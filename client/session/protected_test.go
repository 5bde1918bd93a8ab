package session

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProtectedReason(t *testing.T) {
	const src = "/srv/proj"
	for _, p := range []string{".bashrc", "a/b/.bashrc", ".git/config", "x/.git/hooks/pre-push", ".git/hooks", ".claude/settings.json", "p/.cursor/rules", ".devcontainer", ".boxsh/policy.json", "w/.git/worktrees/a/gitdir", ".vscode/tasks.json", "sub/.git"} {
		_, ok := protectedReason(src, p, nil)
		require.True(t, ok, p)
	}
	for _, p := range []string{"README", ".git/objects/ab", ".gitignore", "src/.bashrc.bak", "a.git/config", "Makefile"} {
		_, ok := protectedReason(src, p, nil)
		require.False(t, ok, p)
	}
	_, ok := protectedReason(src, "sub/Makefile", []string{"Makefile"})
	require.True(t, ok, "an extra entry")
}

// A change is matched by where it is on the host: in SRC ~/.config,
// autostart/x.desktop is ~/.config/autostart/x.desktop.
func TestProtectedReasonByHostPlace(t *testing.T) {
	for src, rels := range map[string][]string{
		"/home/u/.config":         {"autostart/x.desktop", "systemd/user/x.service", "systemd/user/default.target.wants/x.service", "fish/config.fish", "fish/conf.d/x.fish", "zsh/.zshrc", "git/config", "boxsh/policy.json"},
		"/home/u/.local":          {"bin/git", "share/systemd/user/x.service"},
		"/home/u/.config/systemd": {"user/x.service"},
	} {
		for _, rel := range rels {
			_, ok := protectedReason(src, rel, nil)
			require.True(t, ok, "%s in %s", rel, src)
		}
	}
	for _, rel := range []string{"nvim/init.lua", "autostart.txt", "user/x.service"} {
		_, ok := protectedReason("/home/u/.config", rel, nil)
		require.False(t, ok, rel)
	}
}
