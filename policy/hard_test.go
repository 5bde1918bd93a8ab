package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsProtected(t *testing.T) {
	protected := []string{
		// The list, at the top and at any depth.
		".bashrc", "a/b/.zshenv", ".bash_login", ".bash_logout", ".bash_aliases", ".zlogin",
		".mcp.json", "sub/.mcp.json", ".gitmodules", "x/.gitmodules",
		".vscode", ".vscode/tasks.json", "web/.vscode/settings.json", ".idea/workspace.xml",
		".claude", ".claude/settings.json", ".claude/settings.local.json", "p/.claude/hooks/x.sh", ".claude/commands/run.md",
		".cursor/mcp.json", ".devcontainer/devcontainer.json",
		".config/git/config", "home/.config/git/attributes", ".config/fish/config.fish", ".config/systemd/user/x.service",
		".config/autostart/x.desktop", ".local/bin/git", ".boxsh/policy.json", ".config/boxsh/policy.json",
		".ssh/authorized_keys", ".gitconfig", ".config/zsh/.zshrc", ".config/bash/rc", ".local/share/systemd/user/x.service",
		".config/environment.d/x.conf",
		// git control files, of any repository at any depth.
		".git/config", "deep/er/.git/config", ".git/hooks/pre-commit", ".git/hooks", ".git/commondir",
		".git/config.worktree", ".git/worktrees/w/config.worktree", ".git/worktrees/w/commondir", ".git/info/attributes",
		".git/modules/lib/config", ".git/modules/lib/hooks/post-checkout", ".git/modules/a/b/commondir",
		".git/modules/lib/modules/inner/config",
		// A new or replaced repository.
		".git", "sub/.git",
		// Path forms.
		"./.bashrc", "a//.git/config", "/abs/.mcp.json",
	}
	for _, p := range protected {
		reason, ok := IsProtected(p)
		assert.True(t, ok, p)
		assert.NotEmpty(t, reason, p)
	}
	open := []string{
		"", ".", "README.md", "src/main.go", ".bashrc.d/x", "bashrc", ".git/objects/ab/cdef", ".git/refs/heads/main",
		".git/index", ".git/HEAD", ".git/COMMIT_EDITMSG", ".git/logs/HEAD", ".git/modules/lib/objects/ab/cd",
		".config/nvim/init.lua", ".local/share/x", ".gitignore", ".github/workflows/ci.yml", "x.git/config",
		".mcp.json.bak", ".claude-notes", "config", "hooks/pre-commit",
	}
	for _, p := range open {
		_, ok := IsProtected(p)
		assert.False(t, ok, p)
	}
	// The user's entries add to the list.
	reason, ok := IsProtected("svc/.envrc", ".envrc", "deploy/")
	assert.True(t, ok)
	assert.True(t, strings.Contains(reason, "filesystem.protect"), reason)
	_, ok = IsProtected("deploy/run.sh", ".envrc", "deploy/")
	assert.True(t, ok)
	_, ok = IsProtected("svc/.envrc")
	assert.False(t, ok, "not without the entry")
}

func TestProtectedPathsDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range ProtectedPaths {
		assert.False(t, seen[e.Path], "duplicate %s", e.Path)
		seen[e.Path] = true
		assert.NotEmpty(t, e.Reason, e.Path)
		assert.False(t, strings.HasPrefix(e.Path, "/") || strings.Contains(e.Path, ".."), e.Path)
	}
	assert.Len(t, HardDeniedWrites, len(ProtectedPaths))
}

func TestValidateProtect(t *testing.T) {
	for _, ok := range []string{".envrc", "deploy/", "a/b.json"} {
		assert.NoError(t, validateProtect(ok), ok)
	}
	for _, bad := range []string{"/etc/x", "~/.x", "*.sh", "../x", "a//b", "."} {
		assert.Error(t, validateProtect(bad), bad)
	}
}

// A path is protected by where it is on the host too: the entries whose
// place starts above the area's root match.
func TestIsProtectedAt(t *testing.T) {
	for root, rels := range map[string][]string{
		"/home/u/.config": {"autostart/x.desktop", "systemd/user/default.target.wants/x.service", "fish/config.fish", "git/config", ".vscode/x"},
		"/home/u/.local":  {"bin/git"},
		"/srv/p":          {".bashrc", ".git/config"},
	} {
		for _, rel := range rels {
			_, ok := IsProtectedAt(root, rel)
			assert.True(t, ok, "%s in %s", rel, root)
		}
	}
	for root, rels := range map[string][]string{
		"/home/u/.config": {"nvim/init.lua", "", "."},
		"/home/u/src":     {"bin/git", "autostart/x.desktop"},
		"relative":        {"bin/git"},
	} {
		for _, rel := range rels {
			_, ok := IsProtectedAt(root, rel)
			assert.False(t, ok, "%s in %s", rel, root)
		}
	}
}
