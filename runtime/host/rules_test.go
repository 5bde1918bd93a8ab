package host

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// ruleTree makes files (and the directories above them) under root.
func ruleTree(t *testing.T, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(f), 0o644))
	}
}

func rules(values ...string) []policy.Rule {
	var rs []policy.Rule
	for _, v := range values {
		rs = append(rs, policy.Rule{Value: v, Source: "test"})
	}
	return rs
}

func paths(rps []plan.RuledPath) []string {
	var ps []string
	for _, rp := range rps {
		ps = append(ps, rp.Path)
	}
	return ps
}

func TestResolveFileRules(t *testing.T) {
	home := t.TempDir()
	project := filepath.Join(home, "project")
	other := t.TempDir() // bound read-only
	ruleTree(t, project, ".env", ".env.example", "app/config/.env.local", "certs/a.pem", "node_modules/pkg/test.pem", "docs/a.md", "src/main.go")
	ruleTree(t, other, "b.pem")
	ruleTree(t, home, ".ssh/id_rsa")
	require.NoError(t, os.Symlink(filepath.Join(project, "certs/a.pem"), filepath.Join(project, "link.pem")))
	cow := t.TempDir()
	cowDst := filepath.Join(t.TempDir(), "dst")
	require.NoError(t, os.Mkdir(cowDst, 0o755))
	ruleTree(t, cow, "secret.key")

	sb := policy.Sandbox{Enabled: true, Binds: []policy.Bind{
		{Mode: policy.ReadWrite, Src: project, Dst: project},
		{Mode: policy.ReadOnly, Src: other, Dst: other},
		{Mode: policy.CopyOnWrite, Src: cow, Dst: cowDst},
	}}
	p := policy.Policy{
		DenyRead:  rules(".env", ".env.*", "*.pem", "*.key", "~/.ssh"),
		AllowRead: rules(".env.example"),
		DenyWrite: rules("docs", "*.go", other),
	}
	fr, err := resolveFileRules(sb, p, home, project)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		filepath.Join(project, ".env"),
		filepath.Join(project, "app/config/.env.local"),
		filepath.Join(project, "certs/a.pem"),
		filepath.Join(other, "b.pem"),
		filepath.Join(cowDst, "secret.key"), // found in SRC, covered at DST
	}, paths(fr.DenyRead), "allowRead exempts .env.example; node_modules and symlinks are not looked into; ~/.ssh is not bound")
	assert.ElementsMatch(t, []string{
		filepath.Join(project, "docs"),
		filepath.Join(project, "src/main.go"),
	}, paths(fr.DenyWrite), "write rules only in writable binds")
	for _, rp := range fr.DenyRead {
		if rp.Path == filepath.Join(project, ".env") {
			assert.Equal(t, ".env (test)", rp.Rule)
		}
	}

	// ~/.ssh counts once home is bound.
	sb.Binds = append(sb.Binds, policy.Bind{Mode: policy.ReadOnly, Src: home, Dst: home})
	fr, err = resolveFileRules(sb, p, home, project)
	require.NoError(t, err)
	assert.Contains(t, fr.DenyRead, plan.RuledPath{Path: filepath.Join(home, ".ssh"), Dir: true, Rule: "~/.ssh (test)"})
}

func TestAllowWriteBinds(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	ruleTree(t, cwd, "build/x", "cache/y")
	sb := policy.Sandbox{Binds: []policy.Bind{{Mode: policy.ReadWrite, Src: filepath.Join(cwd, "cache"), Dst: filepath.Join(cwd, "cache")}}}
	binds, err := allowWriteBinds(sb, policy.Policy{AllowWrite: rules("build", filepath.Join(cwd, "cache"))}, home, cwd)
	require.NoError(t, err)
	assert.Equal(t, []policy.Bind{{Mode: policy.ReadWrite, Src: filepath.Join(cwd, "build"), Dst: filepath.Join(cwd, "build")}}, binds, "a path already bound is left as it is")

	_, err = allowWriteBinds(sb, policy.Policy{AllowWrite: rules("missing")}, home, cwd)
	assert.ErrorContains(t, err, `filesystem.allowWrite "missing" (test)`)
	_, err = allowWriteBinds(sb, policy.Policy{AllowWrite: rules("*.log")}, home, cwd)
	assert.ErrorContains(t, err, "not a name pattern")
}

// lowerWalkLimit sets the walk's limits for one test (the seam exists only
// in tests: the variables are not set anywhere else).
func lowerWalkLimit(t *testing.T, limit int, timeout time.Duration) {
	t.Helper()
	oldLimit, oldTimeout := ruleWalkLimit, ruleWalkTimeout
	ruleWalkLimit, ruleWalkTimeout = limit, timeout
	t.Cleanup(func() { ruleWalkLimit, ruleWalkTimeout = oldLimit, oldTimeout })
}

func TestResolveFileRulesFailsClosed(t *testing.T) {
	project := t.TempDir()
	ruleTree(t, project, ".env", "a/b", "a/c", "a/d", "a/e")
	sb := policy.Sandbox{Enabled: true, Binds: []policy.Bind{{Mode: policy.ReadWrite, Src: project, Dst: project}}}
	p := policy.Policy{DenyRead: rules(".env")}

	lowerWalkLimit(t, 5, time.Minute)
	_, err := resolveFileRules(sb, p, t.TempDir(), project)
	require.ErrorIs(t, err, ErrFileRules, "too many files: the sandbox must not start")
	assert.Equal(t, `file rules: --bind wr:`+project+`: the binds hold more than 5 files, too many to find every match of the denyRead name patterns (such as .env (test)): bind a smaller directory, or write the rules as paths ("config/.env" rather than ".env")`, err.Error())

	lowerWalkLimit(t, 100, time.Minute)
	fr, err := resolveFileRules(sb, p, t.TempDir(), project)
	require.NoError(t, err, "the normal case")
	assert.Equal(t, []string{filepath.Join(project, ".env")}, paths(fr.DenyRead))

	lowerWalkLimit(t, 100, -time.Second)
	ruleTree(t, project, bigTree(5000)...)
	lowerWalkLimit(t, 100_000, -time.Second)
	_, err = resolveFileRules(sb, p, t.TempDir(), project)
	require.ErrorIs(t, err, ErrFileRules, "out of time")
	assert.Contains(t, err.Error(), "took more than")

	// Path rules need no walk.
	lowerWalkLimit(t, 0, time.Minute)
	fr, err = resolveFileRules(sb, policy.Policy{DenyRead: rules(".env/x", "a/b")}, t.TempDir(), project)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(project, "a/b")}, paths(fr.DenyRead))
}

func bigTree(n int) []string {
	var files []string
	for i := range n {
		files = append(files, fmt.Sprintf("big/%d/f", i))
	}
	return files
}

func TestResolveFileRulesUnreadableDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any directory")
	}
	project := t.TempDir()
	ruleTree(t, project, "hidden/.env")
	require.NoError(t, os.Chmod(filepath.Join(project, "hidden"), 0))
	t.Cleanup(func() { os.Chmod(filepath.Join(project, "hidden"), 0o755) })
	sb := policy.Sandbox{Enabled: true, Binds: []policy.Bind{{Mode: policy.ReadWrite, Src: project, Dst: project}}}
	fr, err := resolveFileRules(sb, policy.Policy{DenyRead: rules(".env")}, t.TempDir(), project)
	require.NoError(t, err)
	require.Len(t, fr.DenyRead, 1, "a command could chmod 0 a directory before a restart and chmod it back inside: it is covered whole")
	assert.Equal(t, filepath.Join(project, "hidden"), fr.DenyRead[0].Path)
	assert.True(t, fr.DenyRead[0].Dir)
	assert.Contains(t, fr.DenyRead[0].Rule, "a directory boxsh cannot read")

	// The bind itself unreadable: nothing to cover it with but a refusal.
	require.NoError(t, os.Chmod(project, 0))
	t.Cleanup(func() { os.Chmod(project, 0o755) })
	_, err = resolveFileRules(sb, policy.Policy{DenyRead: rules(".env")}, t.TempDir(), project)
	require.ErrorIs(t, err, ErrFileRules)
	assert.Contains(t, err.Error(), "permission denied")
}

func TestResolveFileRulesPins(t *testing.T) {
	project := t.TempDir()
	ruleTree(t, project, "a/b/.env", "docs/x/.env", ".env")
	sb := policy.Sandbox{Enabled: true, Binds: []policy.Bind{
		{Mode: policy.ReadWrite, Src: project, Dst: project},
		{Mode: policy.ReadOnly, Src: filepath.Join(project, "docs"), Dst: filepath.Join(project, "docs")},
	}}
	fr, err := resolveFileRules(sb, policy.Policy{DenyRead: rules(".env"), DenyWrite: rules("a/b")}, t.TempDir(), project)
	require.NoError(t, err)
	pins := map[string][]string{}
	for _, rp := range fr.DenyRead {
		pins[rp.Path] = rp.Pins
	}
	at := func(p string) string { return filepath.Join(project, p) }
	assert.Equal(t, []string{at("a/b"), at("a")}, pins[at("a/b/.env")], "the directories up to the wr bind")
	assert.Empty(t, pins[at(".env")])
	assert.Empty(t, pins[at("docs/x/.env")], "never a pin inside a ro bind: it would be writable")
	require.Len(t, fr.DenyWrite, 1)
	assert.Equal(t, []string{at("a")}, fr.DenyWrite[0].Pins)

	spec, err := plan.BuildSpec(plan.SpecConfig{Sandbox: sb, Rules: fr, Rootfs: t.TempDir(), InitPath: "/bin/true", Args: []string{"/bin/true"}})
	require.NoError(t, err)
	var pinMounts []string
	for _, m := range spec.Mounts {
		if m.Type == "bind" && m.Source == m.Destination && !slices.Contains(m.Options, "ro") && m.Destination != project {
			pinMounts = append(pinMounts, m.Destination)
		}
	}
	assert.ElementsMatch(t, []string{at("a"), at("a/b")}, pinMounts)
}
