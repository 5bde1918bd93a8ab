package host

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// protectFixture makes files and directories under a temporary base.
type protectFixture struct {
	t    *testing.T
	base string
}

func newProtectFixture(t *testing.T) protectFixture {
	return protectFixture{t, filepath.Join(t.TempDir(), "b")}
}

func (f protectFixture) at(p string) string { return filepath.Join(f.base, p) }

func (f protectFixture) mkdir(ps ...string) {
	for _, p := range ps {
		require.NoError(f.t, os.MkdirAll(f.at(p), 0o755))
	}
}

func (f protectFixture) write(p, content string) {
	f.mkdir(filepath.Dir(p))
	require.NoError(f.t, os.WriteFile(f.at(p), []byte(content), 0o644))
}

func wrBind(p string) policy.Bind { return policy.Bind{Mode: policy.ReadWrite, Src: p, Dst: p} }

// rel lists the paths of hps relative to base, the existing or the
// missing ones, sorted.
func (f protectFixture) rel(hps []plan.HostPath, missing bool) []string {
	var out []string
	for _, hp := range hps {
		if hp.Missing == missing && !hp.Tree {
			out = append(out, strings.TrimPrefix(hp.Path, f.base+"/"))
		}
	}
	slices.Sort(out)
	return out
}

func find(hps []plan.HostPath, p string) (plan.HostPath, bool) {
	i := slices.IndexFunc(hps, func(hp plan.HostPath) bool { return hp.Path == p })
	if i < 0 {
		return plan.HostPath{}, false
	}
	return hps[i], true
}

func TestGatherProtectionProject(t *testing.T) {
	f := newProtectFixture(t)
	f.mkdir(".git/hooks", ".git/info", ".git/objects", "a/b/c/d/e/.git/hooks", "web/.vscode", "web/.claude/commands",
		"node_modules/x/.vscode", ".git/modules/lib/hooks", ".git/modules/lib/info", "docs/.cursor", "wt")
	f.write(".git/config", "[core]\n\tbare = false\n[include]\n\tpath = extra.inc\n[includeIf \"gitdir:~/\"]\n\tpath = \"more.inc\"\n")
	f.write(".git/extra.inc", "[core]\n")
	f.write(".git/more.inc", "")
	f.write(".git/modules/lib/HEAD", "ref: refs/heads/main\n")
	f.write(".git/modules/lib/config", "")
	f.write("a/b/c/d/e/.git/config", "[extensions]\n\tworktreeConfig = true\n[include]\n\tpath = missing.inc\n")
	f.write("lib/.git", "gitdir: ../.git/modules/lib\n")
	f.write("web/.claude/settings.json", "{}")
	f.write("a/.bashrc", "")
	f.write("a/.config/git/config", "")
	f.write("a/.local/bin/git", "")
	f.write("secret.env", "")

	p, err := GatherProtection(policy.Sandbox{Binds: []policy.Bind{wrBind(f.base)}}, "/nonexistent-home", f.at("web"), "secret.env", "wt/")
	require.NoError(t, err)
	assert.Equal(t, []string{
		".git/config", ".git/extra.inc", ".git/hooks", ".git/info", ".git/modules/lib/config", ".git/modules/lib/hooks", ".git/modules/lib/info", ".git/more.inc",
		"a/.bashrc", "a/.config/git", "a/.local/bin",
		"a/b/c/d/e/.git/config", "a/b/c/d/e/.git/hooks",
		"docs/.cursor", "lib/.git", "secret.env", "web/.claude", "web/.vscode", "wt",
	}, f.rel(p.Paths, false), "at any depth; not in node_modules; not inside .claude (protected whole)")
	assert.Equal(t, []string{
		".boxsh", ".claude", ".cursor", ".devcontainer", ".git/commondir", ".git/modules/lib/commondir", ".gitmodules", ".idea", ".mcp.json", ".vscode",
		"a/b/c/d/e/.git/commondir", "a/b/c/d/e/.git/config.worktree", "a/b/c/d/e/.git/info", "a/b/c/d/e/.git/missing.inc",
		"web/.boxsh", "web/.cursor", "web/.devcontainer", "web/.gitmodules", "web/.idea", "web/.mcp.json", "web/secret.env", "web/wt",
	}, f.rel(p.Paths, true), "the root's entries and cwd's, the git directories' commondir, info, config.worktree with extensions.worktreeConfig, a missing include")
	assert.ElementsMatch(t, []string{f.at(".git"), f.at("a/b/c/d/e/.git"), f.at("lib/.git")}, p.Repos)

	for _, hp := range p.Paths {
		rel := strings.TrimPrefix(hp.Path, f.base+"/")
		switch {
		case strings.HasSuffix(rel, "commondir"):
			assert.Equal(t, ".", hp.Content, rel)
			assert.False(t, hp.Dir, rel)
		case rel == ".mcp.json":
			assert.False(t, hp.Dir, "a missing file gets a file placeholder, which its readers accept")
			assert.Equal(t, "{\"mcpServers\": {}}\n", hp.Content, "an .mcp.json of no servers")
		case rel == ".gitmodules":
			assert.False(t, hp.Dir, rel)
			assert.Empty(t, hp.Content, "an empty .gitmodules: no submodules")
		case rel == "a/b/c/d/e/.git/config":
			assert.Equal(t, []string{f.at("a/b/c/d/e/.git"), f.at("a/b/c/d/e"), f.at("a/b/c/d"), f.at("a/b/c"), f.at("a/b"), f.at("a")}, hp.Pins)
		}
		assert.NotEmpty(t, hp.Reason, rel)
	}
}

func TestGatherProtectionFileBind(t *testing.T) {
	f := newProtectFixture(t)
	f.write("notes.txt", "")
	f.write("p/.bashrc", "")
	p, err := GatherProtection(policy.Sandbox{Binds: []policy.Bind{wrBind(f.at("notes.txt")), wrBind(f.at("p/.bashrc"))}}, "", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"p/.bashrc"}, f.rel(p.Paths, false), "a bind of a protected file is read-only")
	assert.Empty(t, f.rel(p.Paths, true), "no placeholders below a file")
}

func TestGatherProtectionSymlink(t *testing.T) {
	f := newProtectFixture(t)
	f.mkdir("sub")
	require.NoError(t, os.Symlink("/", f.at("sub/.vscode")))
	_, err := GatherProtection(policy.Sandbox{Binds: []policy.Bind{wrBind(f.base)}}, "", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), f.at("sub/.vscode")+" is a symbolic link (to /)")
	assert.Contains(t, err.Error(), "remove it (rm "+f.at("sub/.vscode")+")")
}

func TestGatherProtectionBudget(t *testing.T) {
	f := newProtectFixture(t)
	f.mkdir("x")
	g := &gatherer{sb: policy.Sandbox{Binds: []policy.Bind{wrBind(f.base)}}, seen: map[string]bool{}, budget: 1}
	err := g.walk(f.base)
	assert.ErrorContains(t, err, "holds more than")
	assert.ErrorContains(t, err, f.base)
}

func TestGatherProtectionHome(t *testing.T) {
	f := newProtectFixture(t)
	home := f.at("home")
	f.mkdir("home/proj/.git/hooks", "home/.config/nvim", "home/.cache/x", "home/.cargo/registry", "home/.cargo/bin", "home/dotfiles/nvim", "home/.ssh", "home/.config/git")
	f.write("home/proj/.git/config", "")
	f.write("home/dotfiles/bashrc", "")
	f.write("home/notes.txt", "")
	require.NoError(t, os.Symlink("dotfiles/bashrc", filepath.Join(home, ".bashrc")))
	require.NoError(t, os.Symlink("../dotfiles/nvim", filepath.Join(home, ".config", "nvim2")))

	for _, bind := range []string{home, f.base} {
		p, err := GatherProtection(policy.Sandbox{Binds: []policy.Bind{wrBind(bind)}}, home, home)
		require.NoError(t, err, "a symlinked dotfile is fine: home's dot entries are read-only")
		hp, ok := find(p.Paths, home)
		require.True(t, ok, "home read-only")
		assert.True(t, hp.Tree && hp.Dir)
		assert.ElementsMatch(t, []string{f.at("home/proj"), f.at("home/dotfiles"), f.at("home/.cache"), f.at("home/.cargo/registry")}, hp.Rebind,
			"the top-level directories that are not dot entries, and the caches, stay writable")
		rel := f.rel(p.Paths, false)
		assert.Contains(t, rel, "home/proj/.git/hooks")
		assert.Contains(t, rel, "home/dotfiles/bashrc", "the target of ~/.bashrc, a symlink into a writable directory")
		assert.Contains(t, rel, "home/dotfiles/nvim", "the target of ~/.config/nvim2")
		for _, r := range slices.Concat(rel, f.rel(p.Paths, true)) {
			assert.False(t, strings.HasPrefix(r, "home/."), "%s: read-only already, no mount needed", r)
		}
	}
	// An explicit bind inside home is its own.
	p, err := GatherProtection(policy.Sandbox{Binds: []policy.Bind{wrBind(home), wrBind(f.at("home/.config"))}}, home, home)
	require.NoError(t, err)
	assert.Contains(t, f.rel(p.Paths, false), "home/.config/git", "the list's entries in it, .config/git/ for one")
}

func TestNewRepositories(t *testing.T) {
	f := newProtectFixture(t)
	f.mkdir(".git/hooks", "a/b/c", "quiet/x")
	sb := policy.Sandbox{Binds: []policy.Bind{wrBind(f.base)}}
	start, err := GatherProtection(sb, "", "")
	require.NoError(t, err)
	since := time.Now()
	repos, entries := newRepositories(sb, "", start, since)
	assert.Empty(t, repos)
	assert.Empty(t, entries)

	f.mkdir("a/b/c/new/.git/hooks", "fresh/deeper/.git")
	f.write("a/b/c/new/.git/hooks/pre-commit", "")
	f.write("a/b/c/new/.git/config", "[core]\n\tfsmonitor = x\n")
	f.write("quiet/x/.git", "gitdir: /elsewhere\n")
	// Setting the directory's times back does not hide it: its change
	// time cannot be set.
	old := time.Unix(1e9, 0)
	require.NoError(t, os.Chtimes(f.at("quiet/x"), old, old))
	f.write("a/b/.claude/settings.json", "{}")
	f.write("fresh/.config/git/config", "")
	got, entries := newRepositories(sb, "", start, since)
	assert.Equal(t, []string{
		f.at("a/b/.claude") + " (Claude Code settings (hooks are shell commands run on the host), commands and agents)",
		f.at("fresh/.config/git") + " (the user's git configuration (config, attributes): core.fsmonitor, core.hooksPath, aliases run programs)",
	}, entries, "new entries of the list; not the placeholders or protected paths of the start")
	assert.ElementsMatch(t, []string{
		f.at("a/b/c/new/.git") + " (hooks/pre-commit, config: fsmonitor)",
		f.at("fresh/deeper/.git"),
		f.at("quiet/x/.git") + " (a gitfile naming /elsewhere)",
	}, got)
	full, fullEntries := newRepositories(sb, "", Protection{Repos: start.Repos, Paths: start.Paths}, since)
	assert.ElementsMatch(t, got, full, "the same by a full walk")
	assert.ElementsMatch(t, entries, fullEntries, "the same by a full walk")
}

func TestCowProtectedChanges(t *testing.T) {
	f := newProtectFixture(t)
	f.mkdir("src/.git/hooks", "src/lib")
	f.write("dst/.git/index", "")
	f.write("dst/.git/hooks/pre-commit", "")
	f.write("dst/.git/objects/ab/cdef", "")
	f.write("dst/lib/.vscode/tasks.json", "")
	f.write("dst/lib/main.go", "")
	f.write("dst/.claude/settings.json", "")
	f.mkdir("dst/new/.git")
	b := policy.Bind{Mode: policy.CopyOnWrite, Src: f.at("src"), Dst: f.at("dst")}
	got := cowProtectedChanges(b)
	var paths []string
	for _, g := range got {
		p, _, _ := strings.Cut(g, " (")
		paths = append(paths, strings.TrimPrefix(p, f.at("dst")+"/"))
	}
	assert.ElementsMatch(t, []string{".git/hooks/pre-commit", "lib/.vscode/tasks.json", ".claude/settings.json", "new/.git"}, paths)
	assert.Empty(t, cowProtectedChanges(wrBind(f.at("dst"))), "only cow binds")
}

// What a command made inside tool and dependency caches is not reported
// (no host tool acts on a module's .devcontainer in Go's module cache);
// the same entries elsewhere still are (issue 24).
func TestNewRepositoriesSkipsToolCaches(t *testing.T) {
	f := newProtectFixture(t)
	f.mkdir("proj")
	sb := policy.Sandbox{Binds: []policy.Bind{wrBind(f.base)}}
	start, err := GatherProtection(sb, "", "")
	require.NoError(t, err)
	since := time.Now()
	for _, d := range []string{
		"go/pkg/mod/github.com/x/sdk@v1.8.0",
		"go/pkg/mod/honnef.co/go/tools@v0.8.2",
		"proj/node_modules/left-pad",
		".cache/go-build/ab",
		".npm/_cacache/x",
	} {
		f.write(d+"/.devcontainer/devcontainer.json", "{}")
		f.write(d+"/.gitmodules", "")
		f.mkdir(d + "/.git/hooks")
		f.write(d+"/.git/hooks/post-checkout", "")
	}
	f.write("proj/.devcontainer/devcontainer.json", "{}")
	f.write("proj/sub/.gitmodules", "")
	f.mkdir("proj/vendored/.git/hooks")
	f.write("proj/pkg/.vscode/tasks.json", "")
	repos, entries := newRepositories(sb, "", start, since)
	var got []string
	for _, e := range append(repos, entries...) {
		p, _, _ := strings.Cut(e, " (")
		got = append(got, strings.TrimPrefix(p, f.base+"/"))
	}
	assert.ElementsMatch(t, []string{"proj/.devcontainer", "proj/sub/.gitmodules", "proj/vendored/.git", "proj/pkg/.vscode"}, got,
		"the real risks, and nothing inside the caches")
}

// The entries of the list whose place in the home falls inside a bind of
// a directory in it are protected there even when missing, whatever
// directory of the home the bind starts at.
func TestGatherProtectionBindInHome(t *testing.T) {
	f := newProtectFixture(t)
	home := f.at("home")
	f.mkdir("home/.config/nvim", "home/.local/share", "home/.config/systemd", "home/proj")
	for bind, want := range map[string][]string{
		"home/.config": {"home/.config/autostart", "home/.config/systemd/user", "home/.config/fish", "home/.config/zsh",
			"home/.config/bash", "home/.config/git", "home/.config/boxsh", "home/.config/environment.d", "home/.config/gcloud"},
		"home/.local":          {"home/.local/bin", "home/.local/share/systemd/user"},
		"home/.config/systemd": {"home/.config/systemd/user"},
	} {
		p, err := GatherProtection(policy.Sandbox{Binds: []policy.Bind{wrBind(f.at(bind))}}, home, "")
		require.NoError(t, err)
		missing := f.rel(p.Paths, true)
		for _, w := range want {
			assert.Contains(t, missing, w, "--bind wr:~/%s", strings.TrimPrefix(bind, "home/"))
			hp, _ := find(p.Paths, f.at(w))
			assert.True(t, hp.Dir, "%s: a directory placeholder", w)
		}
		assert.NoError(t, checkConfigHidden(policy.Sandbox{Binds: []policy.Bind{wrBind(f.at(bind))}}, p.Paths, home))
	}
	// Outside the home, or in a directory of it that is not where the
	// list's entries are, only what exists is protected.
	for _, bind := range []string{f.at("home/proj"), f.at("other/.config")} {
		f.mkdir(strings.TrimPrefix(bind, f.base+"/"))
		p, err := GatherProtection(policy.Sandbox{Binds: []policy.Bind{wrBind(bind)}}, home, "")
		require.NoError(t, err)
		for _, m := range f.rel(p.Paths, true) {
			assert.False(t, strings.Contains(m, "autostart") || strings.Contains(m, "systemd") || strings.HasSuffix(m, "/bin"), "%s: no home entry outside its place", m)
		}
	}
}

// A placeholder with content that boxsh left (a bundle's run, a killed
// front) is a missing entry again; the user's own file of the same name is
// not, whatever it holds.
func TestLeftPlaceholder(t *testing.T) {
	dir := t.TempDir()
	mcp := filepath.Join(dir, ".mcp.json")
	require.NoError(t, os.WriteFile(mcp, []byte(plan.PlaceholderContent(".mcp.json")), 0o444))
	assert.True(t, leftPlaceholder(mcp))
	require.NoError(t, os.Chmod(mcp, 0o644))
	assert.False(t, leftPlaceholder(mcp), "a writable file is the user's")
	require.NoError(t, os.Chmod(mcp, 0o644))
	require.NoError(t, os.WriteFile(mcp, []byte(`{"mcpServers": {"x": {}}}`), 0o444))
	require.NoError(t, os.Chmod(mcp, 0o444))
	assert.False(t, leftPlaceholder(mcp), "other content is the user's")
	gm := filepath.Join(dir, ".gitmodules")
	require.NoError(t, os.WriteFile(gm, nil, 0o444))
	assert.False(t, leftPlaceholder(gm), "an empty file may be anyone's")
}

// A directory swapped for a link while the walk runs makes the walk go again.
//
// The swap stands for another sandbox writing the same bind, hiding a
// repository from this one's start. Each GatherProtection either finds the
// repository, under one of its names, and keeps its hooks read-only, or
// refuses: the bind kept changing, or the link itself. None returns without
// it.
func TestGatherProtectionSwappedDirectory(t *testing.T) {
	f := newProtectFixture(t)
	f.mkdir("sub/repo/.git/hooks")
	for i := range 100 {
		f.mkdir(fmt.Sprintf("wide/%d/d", i))
	}
	f.write("sub/repo/.git/config", "")
	empty := t.TempDir()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Rename(f.at("sub"), f.at("sub.away"))
			_ = os.Symlink(empty, f.at("sub"))
			_ = os.Remove(f.at("sub"))
			_ = os.Rename(f.at("sub.away"), f.at("sub"))
		}
	}()
	defer func() { close(stop); <-done }()

	sb := policy.Sandbox{Binds: []policy.Bind{wrBind(f.base)}}
	found, refused := 0, 0
	for range 20 {
		p, err := GatherProtection(sb, "/nonexistent-home", "/")
		if err != nil {
			// Refused: the bind kept changing, or the walk met the link
			// at sub (which it refuses too): no sandbox starts.
			refused++
			continue
		}
		// Under the name it had while the walk ran (a change after the
		// walk is the watch's, see watchProtection).
		_, ok := find(p.Paths, f.at("sub/repo/.git/hooks"))
		_, away := find(p.Paths, f.at("sub.away/repo/.git/hooks"))
		require.True(t, ok || away, "a walk that returned missed the repository: %v", f.rel(p.Paths, false))
		found++
	}
	t.Logf("%d walks found the repository, %d refused", found, refused)
}
