//go:build linux

package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Protected paths (issue 14, findings 1, 4, 5 and the planted symlink of
// 8): what a command in a writable bind can do to make the host run code
// later, through git, editors, agents and shell start-up files.

// hostGit runs git in dir on the host, with a fixed identity and no
// user or system configuration, and returns its output.
func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

// newHostRepo makes a git repository with one commit at dir.
func newHostRepo(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	hostGit(t, dir, "init", "-q", "-b", "main")
	writeHostFile(t, filepath.Join(dir, "README"), "hello\n", 0o644)
	hostGit(t, dir, "add", "README")
	hostGit(t, dir, "commit", "-q", "-m", "first")
}

// sandboxGit is the git command line for scripts in the sandbox: no
// user configuration, a fixed identity.
const sandboxGit = `g() { GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t git "$@"; }
`

// TestProtectGitRedirects tries, from inside, every way of making the
// host's git run a program through an existing repository. The repository
// is at the root of a wr bind, and five levels below it. The ways are:
//   - a commondir redirect to a copy with an fsmonitor (the red team's
//     finding);
//   - config and the file it includes;
//   - config.worktree, where extensions.worktreeConfig is on;
//   - hooks, info, and an existing worktree's files;
//   - a gitfile, and renaming or replacing .git.
//
// Then the user's git on the host runs no bait, and git in the sandbox
// still works.
func TestProtectGitRedirects(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	proj := t.TempDir()
	newHostRepo(t, proj)
	deep := filepath.Join(proj, "a", "b", "c", "d", "e")
	newHostRepo(t, deep)
	hostGit(t, deep, "config", "extensions.worktreeConfig", "true")
	hostGit(t, proj, "config", "include.path", "extra.inc")
	hostGit(t, proj, "config", "--add", "include.path", "missing.inc")
	writeHostFile(t, filepath.Join(proj, ".git", "extra.inc"), "[user]\n\tname = t\n", 0o644)
	hostGit(t, proj, "worktree", "add", "-q", filepath.Join(proj, "wt"), "-b", "side")
	gitfile := filepath.Join(proj, "wt", ".git")
	gitfileContent, err := os.ReadFile(gitfile)
	require.NoError(t, err)
	config, err := os.ReadFile(filepath.Join(proj, ".git", "config"))
	require.NoError(t, err)
	bait := filepath.Join(t.TempDir(), "BAIT")
	evil := `[core]
	fsmonitor = "touch ` + bait + `; false"
	hooksPath = /tmp
`
	r := sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, tryFunc+sandboxGit+`
		g status --porcelain >/dev/null && echo git-ok
		mkdir -p .e && cp -r .git/objects .git/refs .git/HEAD .e/ && mkdir -p .e/hooks && printf '%s' '`+evil+`' > .e/config
		try commondir sh -c 'echo ../.e > .git/commondir'
		try config sh -c 'printf "%s" "$1" >> .git/config' - '`+evil+`'
		try include sh -c 'printf "%s" "$1" >> .git/extra.inc' - '`+evil+`'
		try missing-include sh -c 'printf "%s" "$1" > .git/missing.inc' - '`+evil+`'
		try hook sh -c 'echo "touch `+bait+`" > .git/hooks/pre-commit'
		try info sh -c 'echo "* filter=x" > .git/info/attributes'
		try deep-commondir sh -c 'echo ../../../../../.e > a/b/c/d/e/.git/commondir'
		try deep-config sh -c 'printf "%s" "$1" >> a/b/c/d/e/.git/config' - '`+evil+`'
		try deep-worktree-config sh -c 'printf "%s" "$1" > a/b/c/d/e/.git/config.worktree' - '`+evil+`'
		try deep-hook sh -c 'echo x > a/b/c/d/e/.git/hooks/post-checkout'
		try worktree-config sh -c 'echo x > .git/worktrees/wt/config.worktree'
		try worktree-commondir sh -c 'echo ../../../.e > .git/worktrees/wt/commondir'
		try gitfile sh -c 'echo "gitdir: ../.e" > wt/.git'
		try rename-git mv .git .git.orig
		try replace-hooks rm -r .git/hooks
		try rename-repo mv a a2
		try git-config g config core.fsmonitor "touch `+bait+`"
		echo done`)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "git-ok\n")
	assert.Contains(t, r.stdout, "done\n")
	requireRefused(t, r, "commondir", "config", "include", "missing-include", "hook", "info", "deep-commondir", "deep-config", "deep-worktree-config",
		"deep-hook", "worktree-config", "worktree-commondir", "gitfile", "rename-git", "replace-hooks", "rename-repo", "git-config")

	requireHostFile(t, filepath.Join(proj, ".git", "config"), string(config))
	requireHostFile(t, gitfile, string(gitfileContent))
	requireHostAbsent(t, filepath.Join(proj, ".git", "commondir"))
	requireHostAbsent(t, filepath.Join(proj, ".git", "missing.inc"))
	requireHostAbsent(t, filepath.Join(deep, ".git", "commondir"))
	requireHostAbsent(t, filepath.Join(deep, ".git", "config.worktree"))
	requireHostAbsent(t, filepath.Join(proj, ".git", "hooks", "pre-commit"))
	// The user's git on the host.
	hostGit(t, proj, "status")
	hostGit(t, deep, "status")
	hostGit(t, filepath.Join(proj, "wt"), "status")
	requireHostAbsent(t, bait)
}

// TestProtectGitStillWorks runs the usual git commands in a protected
// repository in the sandbox: they work, show nothing of the placeholders,
// and the host sees the commit.
func TestProtectGitStillWorks(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	proj := t.TempDir()
	newHostRepo(t, proj)
	r := sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, sandboxGit+`
		set -e
		echo "status:[$(g status --porcelain)]"
		echo new > new.txt
		g add -A
		g commit -q -m second
		g branch topic
		g log --format=%s
		g branch --format='%(refname:short)'
		echo "status:[$(g status --porcelain)]"
		g worktree list --porcelain | head -1`)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "status:[]\nsecond\nfirst\nmain\ntopic\nstatus:[]\nworktree "+proj+"\n", r.stdout)
	assert.Equal(t, "new.txt\nREADME\n", hostGit(t, proj, "show", "--format=", "--name-only", "HEAD")+hostGit(t, proj, "show", "--format=", "--name-only", "HEAD~1"),
		"the commit holds only the new file")
	assert.Empty(t, hostGit(t, proj, "status", "--porcelain"))
	assert.Empty(t, hostGit(t, proj, "status", "--porcelain", "--ignored", "--untracked-files=all"), "nothing left on the host")
	for _, p := range []string{".mcp.json", ".gitmodules", ".claude", ".git/commondir"} {
		requireHostAbsent(t, filepath.Join(proj, p))
	}
}

// TestProtectPlaceholdersInvisible checks the red team's finding 5. An
// agent's usual `git add -A && git commit` in a wr repository must not
// commit the placeholders of missing protected files (.gitmodules,
// .mcp.json). The sandbox's git does not show them, since its excludes file
// names them. They are read-only regular files the host's tools accept: an
// empty .gitmodules, an .mcp.json of no servers. The host's git shows them
// as untracked while the sandbox runs, and nothing of them is left after.
func TestProtectPlaceholdersInvisible(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	proj := t.TempDir()
	newHostRepo(t, proj)
	s := startServer(t, ctx, serverOptions{dir: proj, args: []string{"--sandbox", "--bind", "wr:" + proj}})
	out := s.bash(sandboxGit + `g status --porcelain --untracked-files=all; g add -A; g commit -q -m agent; echo "commit:$?"; ls -A`)
	assert.Equal(t, 0, out.ExitCode, out.Stderr)
	assert.NotContains(t, out.Stdout, "??", "placeholders in git status inside")
	assert.Contains(t, out.Stdout, "commit:1", "nothing to commit")
	assert.Contains(t, out.Stdout, ".mcp.json", "the placeholder is there")
	assert.Equal(t, "?? .gitmodules\n?? .mcp.json\n", hostGit(t, proj, "status", "--porcelain", "--untracked-files=all"), "the file placeholders, the host's git shows while the sandbox runs")
	requireHostFile(t, filepath.Join(proj, ".mcp.json"), "{\"mcpServers\": {}}\n")
	requireHostFile(t, filepath.Join(proj, ".gitmodules"), "")
	assert.Empty(t, hostGit(t, proj, "submodule", "status"), "git reads the empty .gitmodules")
	out = s.bash(`echo '{"mcpServers":{"x":{"command":"evil"}}}' > .mcp.json`)
	assert.NotEqual(t, 0, out.ExitCode, "the placeholders refuse writes")
	out = s.bash(`echo '[submodule "x"]' > .gitmodules`)
	assert.NotEqual(t, 0, out.ExitCode, "the placeholders refuse writes")
	s.stop()
	assert.Equal(t, "first\n", hostGit(t, proj, "log", "--format=%s"))
	for _, p := range []string{".mcp.json", ".gitmodules", ".vscode", ".idea", ".claude", ".cursor", ".devcontainer", ".boxsh", ".git/commondir"} {
		requireHostAbsent(t, filepath.Join(proj, p))
	}
}

// TestProtectAgentConfig is finding 4 in a project: the agents' and
// editors' configuration the host runs, at the root (missing) and deeper
// (existing), and boxsh's own project policy.
func TestProtectAgentConfig(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	proj := t.TempDir()
	writeHostFile(t, filepath.Join(proj, "sub", ".claude", "settings.json"), "{}\n", 0o644)
	writeHostFile(t, filepath.Join(proj, "x", "y", "z", ".devcontainer", "devcontainer.json"), "{}\n", 0o644)
	r := sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, tryFunc+`
		try claude-settings sh -c 'mkdir -p .claude && echo "{\"hooks\":{}}" > .claude/settings.json'
		try claude-local sh -c 'echo x > .claude/settings.local.json'
		try claude-sub sh -c 'echo x > sub/.claude/settings.json'
		try claude-sub-hooks sh -c 'mkdir -p sub/.claude/hooks && echo x > sub/.claude/hooks/h.sh'
		try cursor sh -c 'mkdir -p .cursor && echo x > .cursor/mcp.json'
		try devcontainer sh -c 'mkdir -p .devcontainer && echo x > .devcontainer/devcontainer.json'
		try devcontainer-deep sh -c 'echo x > x/y/z/.devcontainer/devcontainer.json'
		try boxsh-policy sh -c 'mkdir -p .boxsh && echo "{}" > .boxsh/policy.json'
		try mcp sh -c 'echo "{}" > .mcp.json'
		echo fine > notes.txt && echo notes-ok`)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "notes-ok\n")
	requireRefused(t, r, "claude-settings", "claude-local", "claude-sub", "claude-sub-hooks", "cursor", "devcontainer", "devcontainer-deep", "boxsh-policy", "mcp")
	requireHostFile(t, filepath.Join(proj, "sub", ".claude", "settings.json"), "{}\n")
	for _, p := range []string{".claude", ".cursor", ".devcontainer", ".boxsh", ".mcp.json", ".gitmodules", "sub/.claude/hooks"} {
		requireHostAbsent(t, filepath.Join(proj, p))
	}
}

// TestProtectWritableHome checks finding 4 with wr:$HOME. The dot entries
// at the top of home and ~/.config, and ~/.local/bin, can be neither
// changed nor created. They hold start-up files, git and fish
// configuration, user services, autostart, a git that shadows the real one,
// and boxsh's own settings. The caches and the projects stay writable.
func TestProtectWritableHome(t *testing.T) {
	requireRootless(t)
	home := t.TempDir()
	writeHostFile(t, filepath.Join(home, ".bashrc"), "# rc\n", 0o644)
	writeHostFile(t, filepath.Join(home, ".config", "git", "config"), "[user]\n", 0o644)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".local", "bin"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cache"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, "proj"), 0o755))
	// A dotfiles manager's link: the link is read-only with the home, and
	// its target, in a writable directory, is kept read-only too.
	writeHostFile(t, filepath.Join(home, "dotfiles", "zshrc"), "# zsh\n", 0o644)
	require.NoError(t, os.Symlink("dotfiles/zshrc", filepath.Join(home, ".zshrc")))
	t.Setenv("HOME", home)
	r := sandboxShell(t, filepath.Join(home, "proj"), []string{"--bind", "wr:" + home}, tryFunc+`
		cd "$HOME"
		try bashrc sh -c 'echo evil >> .bashrc'
		for f in .bash_login .bash_logout .bash_aliases .zshenv .zlogin .profile .newdot; do
			try "$f" sh -c "echo evil > $f"
		done
		try git-config sh -c 'echo evil >> .config/git/config'
		try fish sh -c 'mkdir -p .config/fish && echo evil > .config/fish/config.fish'
		try systemd sh -c 'mkdir -p .config/systemd/user && echo evil > .config/systemd/user/x.service'
		try autostart sh -c 'mkdir -p .config/autostart && echo evil > .config/autostart/x.desktop'
		try local-bin sh -c 'echo evil > .local/bin/git'
		try boxsh-config sh -c 'mkdir -p .config/boxsh && echo "{}" > .config/boxsh/policy.json'
		try new-config sh -c 'mkdir .config/new'
		try zshrc-target sh -c 'echo evil >> dotfiles/zshrc'
		try zshrc-link sh -c 'ln -sf /tmp/x .zshrc'
		echo c > .cache/c && echo cache-ok
		echo p > proj/p && mkdir proj/d && echo proj-ok`)
	require.Equal(t, 0, r.code(), r.stderr)
	requireRefused(t, r, "bashrc", ".bash_login", ".bash_logout", ".bash_aliases", ".zshenv", ".zlogin", ".profile", ".newdot",
		"git-config", "fish", "systemd", "autostart", "local-bin", "boxsh-config", "new-config", "zshrc-target", "zshrc-link")
	assert.Contains(t, r.stdout, "cache-ok\n")
	assert.Contains(t, r.stdout, "proj-ok\n")
	requireHostFile(t, filepath.Join(home, ".bashrc"), "# rc\n")
	requireHostFile(t, filepath.Join(home, ".config", "git", "config"), "[user]\n")
	for _, p := range []string{".bash_login", ".zshenv", ".newdot", ".config/fish", ".config/systemd", ".config/autostart", ".local/bin/git", ".config/boxsh", ".mcp.json"} {
		requireHostAbsent(t, filepath.Join(home, p))
	}
	requireHostFile(t, filepath.Join(home, "proj", "p"), "p\n")
	requireHostFile(t, filepath.Join(home, "dotfiles", "zshrc"), "# zsh\n")
}

// TestProtectPlantedSymlink checks the planted symlink of finding 8. A link
// at a protected path (ln -s / sub/.vscode) made by one session keeps the
// next from starting, since boxsh cannot keep a link read-only. The refusal
// is one clear message naming the link and the fix. After the fix the
// session starts again.
func TestProtectPlantedSymlink(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	proj := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(proj, "sub"), 0o755))
	r := sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, `ln -s / sub/.vscode && echo planted`)
	require.Equal(t, 0, r.code(), r.stderr)
	require.Equal(t, "planted\n", r.stdout)

	link := filepath.Join(proj, "sub", ".vscode")
	r = sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, `echo ran`)
	assert.NotEqual(t, 0, r.code())
	assert.NotContains(t, r.stdout, "ran")
	assert.Contains(t, r.stderr, link+" is a symbolic link (to /)")
	assert.Contains(t, r.stderr, "rm "+link)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line: %q", r.stderr)

	require.NoError(t, os.Remove(link))
	r = sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, `echo ran`)
	assert.Equal(t, "ran\n", r.stdout, r.stderr)
}

// TestProtectNewRepositoryNamed checks that boxsh names on stderr, when the
// sandbox ends, what it cannot protect: a repository a command makes in a
// writable bind, and a new entry of the protected list below its root. It
// says what in them runs programs.
func TestProtectNewRepositoryNamed(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	proj := t.TempDir()
	newHostRepo(t, proj)
	r := sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, sandboxGit+`
		g init -q nested && g -C nested config core.fsmonitor "touch /tmp/x" && echo ok
		mkdir -p sub/.claude && echo '{"hooks":{}}' > sub/.claude/settings.json`)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stderr, filepath.Join(proj, "nested", ".git"))
	assert.Contains(t, r.stderr, "fsmonitor")
	assert.Contains(t, r.stderr, filepath.Join(proj, "sub", ".claude")+" (Claude Code settings", "a new entry of the list below the root")
	r = sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, `true`)
	assert.NotContains(t, r.stderr, "nested", "named once, by the session that made it")
}

// TestProtectPolicyAddsEntries checks filesystem.protect: the user's own
// entries are protected like the built-in ones.
func TestProtectPolicyAddsEntries(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	proj := t.TempDir()
	writeHostFile(t, filepath.Join(proj, ".boxsh", "policy.json"), `{"filesystem": {"protect": [".envrc", "deploy/"]}}`, 0o644)
	writeHostFile(t, filepath.Join(proj, "svc", ".envrc"), "use nix\n", 0o644)
	writeHostFile(t, filepath.Join(proj, "svc", "deploy", "run.sh"), "true\n", 0o644)
	r := sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, tryFunc+`
		try envrc sh -c 'echo evil >> svc/.envrc'
		try envrc-root sh -c 'echo evil > .envrc'
		try deploy sh -c 'echo evil >> svc/deploy/run.sh'
		echo ok`)
	require.Equal(t, 0, r.code(), r.stderr)
	requireRefused(t, r, "envrc", "envrc-root", "deploy")
	requireHostFile(t, filepath.Join(proj, "svc", ".envrc"), "use nix\n")
	requireHostAbsent(t, filepath.Join(proj, ".envrc"))
}

// TestProtectPlaceholdersAfterKill checks the placeholders a sandbox leaves
// in the user's directory when its front is killed (SIGKILL, no clean-up).
// The next start of a sandbox of the same user, in any directory, removes
// them.
func TestProtectPlaceholdersAfterKill(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	proj := t.TempDir()
	newHostRepo(t, proj)
	marker := sleepMarker(314)
	killMarkedAtCleanup(t, marker)
	cmd := exec.CommandContext(testContext(t), boxshPath(), "--sandbox", "--bind", "wr:"+proj, "-c", "sleep "+marker)
	cmd.Dir = proj
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	waitForArgv(t, "sleep", marker)
	for _, p := range []string{".mcp.json", ".claude", ".git/commondir"} {
		_, err := os.Lstat(filepath.Join(proj, p))
		require.NoError(t, err, "%s: the placeholder is on the host while the sandbox runs", p)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	requireNoArgv(t, 5*time.Second, "sleep", marker)

	r := sandboxShell(t, t.TempDir(), nil, "true")
	require.Equal(t, 0, r.code(), r.stderr)
	for _, p := range []string{".mcp.json", ".gitmodules", ".claude", ".vscode", ".git/commondir"} {
		requireHostAbsent(t, filepath.Join(proj, p))
	}
	assert.Empty(t, hostGit(t, proj, "status", "--porcelain", "--untracked-files=all"))
}

// TestProtectCowChangesNamed checks that in a cow session the changes to
// protected paths, which stay in DST, are named on stderr at exit. They are
// not to be applied to SRC, and DST is not to be used on the host before
// they are checked. SRC does not change.
func TestProtectCowChangesNamed(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	newHostRepo(t, src)
	r := sandboxShell(t, base, []string{"--bind", "cow:" + src + ":" + dst}, `cd `+shq(dst)+` &&
		echo 'touch /tmp/bait' > .git/hooks/pre-commit && mkdir -p .vscode && echo '{}' > .vscode/tasks.json && echo x > notes.txt && echo ok`)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "ok\n", r.stdout)
	assert.Contains(t, r.stderr, filepath.Join(dst, ".git", "hooks", "pre-commit"))
	assert.Contains(t, r.stderr, filepath.Join(dst, ".vscode", "tasks.json"))
	assert.NotContains(t, r.stderr, "notes.txt")
	requireHostAbsent(t, filepath.Join(src, ".git", "hooks", "pre-commit"))
	requireHostAbsent(t, filepath.Join(src, ".vscode"))
}

// TestProtectPlaceholdersAfterErrors checks that nothing boxsh made is
// left in the project when the command fails, is killed by a signal, or
// the sandbox cannot start.
func TestProtectPlaceholdersAfterErrors(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	proj := t.TempDir()
	newHostRepo(t, proj)
	left := func(what string) {
		t.Helper()
		for _, p := range []string{".mcp.json", ".gitmodules", ".claude", ".vscode", ".boxsh", ".git/commondir"} {
			_, err := os.Lstat(filepath.Join(proj, p))
			assert.True(t, os.IsNotExist(err), "%s: %s left on the host", what, p)
		}
		assert.Empty(t, hostGit(t, proj, "status", "--porcelain", "--untracked-files=all"), what)
	}
	r := sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, "exit 3")
	assert.Equal(t, 3, r.code(), r.stderr)
	left("exit 3")
	r = sandboxShell(t, proj, []string{"--bind", "wr:" + proj}, "kill -KILL $$")
	assert.NotEqual(t, 0, r.code(), r.stderr)
	left("killed")
	r = sandboxShell(t, proj, []string{"--bind", "wr:" + proj, "--bind", "ro:" + filepath.Join(proj, "nonexistent")}, "true")
	assert.NotEqual(t, 0, r.code(), "a bind of a missing path fails")
	left("failed start")
}

// TestProtectBindInHome checks a wr bind of a directory in the home (fourth
// round, item 6). The bind keeps from being created the entries of the list
// whose place in the home is inside it, not only those that exist. Those
// are autostart entries, user services and their enabling link, fish's
// start-up file, and a git that shadows the real one. The rest of the bind
// stays writable, and nothing is left on the host.
func TestProtectBindInHome(t *testing.T) {
	requireRootless(t)
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config", "nvim"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config", "boxsh"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".local", "share"), 0o755))
	t.Setenv("HOME", home)
	r := sandboxShell(t, t.TempDir(), []string{"--bind", "wr:" + filepath.Join(home, ".config")}, tryFunc+`
		cd "$HOME/.config"
		try autostart sh -c 'mkdir -p autostart && echo evil > autostart/x.desktop'
		try systemd sh -c 'mkdir -p systemd/user && echo evil > systemd/user/x.service'
		try systemd-wants sh -c 'mkdir -p systemd/user/default.target.wants && ln -s ../x.service systemd/user/default.target.wants/x.service'
		try fish sh -c 'mkdir -p fish && echo evil > fish/config.fish'
		try fish-conf-d sh -c 'mkdir -p fish/conf.d && echo evil > fish/conf.d/x.fish'
		try zsh sh -c 'mkdir -p zsh && echo evil > zsh/.zshrc'
		try git sh -c 'mkdir -p git && echo evil > git/config'
		try environment sh -c 'mkdir -p environment.d && echo LD_PRELOAD=/x > environment.d/x.conf'
		echo ok > nvim/init.lua && mkdir -p systemd/other && echo nvim-ok`)
	require.Equal(t, 0, r.code(), r.stderr)
	requireRefused(t, r, "autostart", "systemd", "systemd-wants", "fish", "fish-conf-d", "zsh", "git", "environment")
	assert.Contains(t, r.stdout, "nvim-ok\n", "the rest of the bind stays writable")
	requireHostFile(t, filepath.Join(home, ".config", "nvim", "init.lua"), "ok\n")
	for _, p := range []string{"autostart", "systemd/user", "fish", "zsh", "git", "environment.d", "bash"} {
		requireHostAbsent(t, filepath.Join(home, ".config", p))
	}

	r = sandboxShell(t, t.TempDir(), []string{"--bind", "wr:" + filepath.Join(home, ".local")}, tryFunc+`
		cd "$HOME/.local"
		try local-bin sh -c 'mkdir -p bin && printf "#!/bin/sh\necho evil\n" > bin/git && chmod +x bin/git'
		try user-units sh -c 'mkdir -p share/systemd/user && echo evil > share/systemd/user/x.service'
		echo ok > share/data && echo share-ok`)
	require.Equal(t, 0, r.code(), r.stderr)
	requireRefused(t, r, "local-bin", "user-units")
	assert.Contains(t, r.stdout, "share-ok\n")
	requireHostAbsent(t, filepath.Join(home, ".local", "bin"))
	requireHostAbsent(t, filepath.Join(home, ".local", "share", "systemd"))
	requireHostFile(t, filepath.Join(home, ".local", "share", "data"), "ok\n")

	// A bind of a directory that holds the home makes the home read-only
	// but for its projects.
	users := filepath.Join(t.TempDir(), "users")
	home = filepath.Join(users, "u")
	require.NoError(t, os.MkdirAll(filepath.Join(home, "proj"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config"), 0o755))
	t.Setenv("HOME", home)
	r = sandboxShell(t, t.TempDir(), []string{"--bind", "wr:" + users}, tryFunc+`
		cd "$HOME"
		try autostart sh -c 'mkdir -p .config/autostart && echo evil > .config/autostart/x.desktop'
		try local-bin sh -c 'mkdir -p .local/bin && echo evil > .local/bin/git'
		try bashrc sh -c 'echo evil > .bashrc'
		echo p > proj/p && echo proj-ok`)
	require.Equal(t, 0, r.code(), r.stderr)
	requireRefused(t, r, "autostart", "local-bin", "bashrc")
	assert.Contains(t, r.stdout, "proj-ok\n")
	for _, p := range []string{".config/autostart", ".local", ".bashrc"} {
		requireHostAbsent(t, filepath.Join(home, p))
	}
}

// TestProtectCowChangesNamedByHostPlace checks a cow session on a directory
// of the home. A change is matched by where it would land on the host:
// autostart/x.desktop of a session on ~/.config is
// ~/.config/autostart/x.desktop. It is named at exit as not to be applied,
// and SRC does not change.
func TestProtectCowChangesNamedByHostPlace(t *testing.T) {
	requireRootless(t)
	home := t.TempDir()
	src := filepath.Join(home, ".config")
	writeHostFile(t, filepath.Join(src, "nvim", "init.lua"), "-- x\n", 0o644)
	dst := filepath.Join(t.TempDir(), "dst")
	t.Setenv("HOME", home)
	r := sandboxShell(t, t.TempDir(), []string{"--bind", "cow:" + src + ":" + dst}, `cd `+shq(dst)+` &&
		mkdir -p autostart systemd/user && echo evil > autostart/x.desktop && echo evil > systemd/user/x.service && echo x > nvim/init.lua && echo ok`)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "ok\n", r.stdout)
	assert.Contains(t, r.stderr, filepath.Join(dst, "autostart", "x.desktop"))
	assert.Contains(t, r.stderr, filepath.Join(dst, "systemd", "user", "x.service"))
	assert.NotContains(t, r.stderr, "init.lua")
	requireHostAbsent(t, filepath.Join(src, "autostart"))
}

// TestProtectOwnPrograms installs boxsh in a project that a sandbox binds
// writable, as one built in its checkout is, and tries from inside to
// change what the host runs at the next start: to write, replace, remove or
// move each of boxsh's programs, or their directory. Each attempt fails and
// every program is unchanged; then the next start, over the same bind,
// still runs.
func TestProtectOwnPrograms(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	project := t.TempDir()
	bin := filepath.Join(project, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	names := []string{"boxsh", "boxsh-init", "boxsh-launch", "boxsh-zygote.so"}
	want := map[string][]byte{}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(boxshPath()), name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), b, 0o755))
		want[name] = b
	}
	var script strings.Builder
	for _, name := range names {
		p := "bin/" + name
		for _, try := range []string{
			"echo x >> " + p,
			"cp /bin/true " + p + ".new && mv -f " + p + ".new " + p,
			"rm -f " + p,
			"mv " + p + " " + p + ".old",
			"ln -sf /bin/true " + p,
		} {
			fmt.Fprintf(&script, "if (%s) 2>/dev/null; then echo 'CHANGED: %s'; fi\n", try, try)
		}
	}
	script.WriteString("if mv bin bin.old 2>/dev/null; then echo 'CHANGED: mv bin'; fi\necho done\n")
	env := []string{"BOXSH_INIT=", "BOXSH_LAUNCH="}
	r := runProgramIn(t, testContext(t), project, "", env, filepath.Join(bin, "boxsh"), "--sandbox", "--bind", "wr:"+project, "-c", script.String())
	require.Equal(t, 0, r.code(), "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "done")
	assert.NotContains(t, r.stdout, "CHANGED")
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(bin, name))
		require.NoError(t, err, name)
		assert.True(t, bytes.Equal(want[name], b), "%s changed", name)
	}
	r = runProgramIn(t, testContext(t), project, "", env, filepath.Join(bin, "boxsh"), "--sandbox", "--bind", "wr:"+project, "-c", "echo again")
	require.Equal(t, 0, r.code(), "stderr: %s", r.stderr)
	assert.Equal(t, "again\n", r.stdout)
}
