package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
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

func paths(rps []RuledPath) []string {
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
	fr, err := ResolveFileRules(sb, p, home, project)
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
	fr, err = ResolveFileRules(sb, p, home, project)
	require.NoError(t, err)
	assert.Contains(t, fr.DenyRead, RuledPath{Path: filepath.Join(home, ".ssh"), Dir: true, Rule: "~/.ssh (test)"})
}

func TestAllowWriteBinds(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	ruleTree(t, cwd, "build/x", "cache/y")
	sb := policy.Sandbox{Binds: []policy.Bind{{Mode: policy.ReadWrite, Src: filepath.Join(cwd, "cache"), Dst: filepath.Join(cwd, "cache")}}}
	binds, err := AllowWriteBinds(sb, policy.Policy{AllowWrite: rules("build", filepath.Join(cwd, "cache"))}, home, cwd)
	require.NoError(t, err)
	assert.Equal(t, []policy.Bind{{Mode: policy.ReadWrite, Src: filepath.Join(cwd, "build"), Dst: filepath.Join(cwd, "build")}}, binds, "a path already bound is left as it is")

	_, err = AllowWriteBinds(sb, policy.Policy{AllowWrite: rules("missing")}, home, cwd)
	assert.ErrorContains(t, err, `filesystem.allowWrite "missing" (test)`)
	_, err = AllowWriteBinds(sb, policy.Policy{AllowWrite: rules("*.log")}, home, cwd)
	assert.ErrorContains(t, err, "not a name pattern")
}

func TestFileRuleMounts(t *testing.T) {
	fr := FileRules{
		DenyRead:  []RuledPath{{Path: "/p/a/b/.env"}, {Path: "/p/keys", Dir: true}},
		DenyWrite: []RuledPath{{Path: "/p/docs", Dir: true}},
	}
	ms, err := fileRuleMounts(fr, "/state/placeholders")
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/docs", "/p/keys", "/p/a/b/.env"}, destinations(ms), "outermost first")
	assert.Equal(t, "/state/placeholders/denied", ms[2].Source)
	assert.Equal(t, "tmpfs", ms[1].Type)
	assert.Contains(t, ms[1].Options, "mode=000")
	assert.Contains(t, ms[0].Options, "ro")
	assert.Equal(t, "/p/docs", ms[0].Source)

	ms, err = fileRuleMounts(FileRules{DenyRead: []RuledPath{{Path: "/p/.env"}}}, "")
	require.NoError(t, err)
	assert.Equal(t, "/dev/null", ms[0].Source, "without placeholders (boxsh spec)")

	_, err = fileRuleMounts(FileRules{DenyRead: []RuledPath{{Path: "p/../x"}}}, "")
	assert.Error(t, err)
}
