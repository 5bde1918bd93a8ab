package toolhost

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/tool"
)

func TestExplainNamesTheRule(t *testing.T) {
	a := &Host{cfg: Config{Rules: []initproto.PolicyRule{
		{Path: "/p/keys", Rule: "denyRead keys (f)"},
		{Path: "/p/keys/public", Rule: "denyRead public (g)"},
		{Path: "/p/docs", Rule: "denyWrite docs (f)", Write: true},
	}}}
	denied := func() tool.Result { return tool.Errorf("read /p/keys/public/a: permission denied") }
	assert.Equal(t, "read /p/keys/public/a: permission denied (refused by the sandbox's policy: denyRead public (g))",
		a.explain(denied(), "/p/keys/public/a", false).Content[0].Text, "the most specific rule")
	assert.Equal(t, "write /p/docs/x: read-only file system (refused by the sandbox's policy: denyWrite docs (f))",
		a.explain(tool.Errorf("write /p/docs/x: read-only file system"), "/p/docs/x", true).Content[0].Text)
	assert.Equal(t, "read /p/docs/x: permission denied",
		a.explain(tool.Errorf("read /p/docs/x: permission denied"), "/p/docs/x", false).Content[0].Text, "a write rule does not explain a refused read")
	assert.Equal(t, "read /p/keys/a: no such file or directory",
		a.explain(tool.Errorf("read /p/keys/a: no such file or directory"), "/p/keys/a", false).Content[0].Text, "only refusals")
	assert.Equal(t, "read /q: permission denied",
		a.explain(tool.Errorf("read /q: permission denied"), "/q", false).Content[0].Text, "no rule covers it")
}

func TestDeniedByNamesTheRuleOfThePath(t *testing.T) {
	a := &Host{cfg: Config{Rules: []initproto.PolicyRule{
		{Path: "/p/keys", Rule: "denyRead keys (f)"},
		{Path: "/p/docs", Rule: "denyWrite docs (f)", Write: true},
	}}}
	assert.Equal(t, "denyRead keys (f)", a.DeniedBy("/p/keys"))
	assert.Empty(t, a.DeniedBy("/p/keys/public"), "below a denied directory: only an allowRead hole is seen, and it is readable")
	assert.Empty(t, a.DeniedBy("/p/docs"), "write rules do not refuse reading")
	assert.Empty(t, a.DeniedBy("/p"))
}

func TestLoadPolicyRules(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(p, []byte(`[{"path":"/p/.env","rule":"denyRead .env (default)","write":false}]`), 0o644))
	rules, err := LoadPolicyRules(p)
	require.NoError(t, err)
	assert.Equal(t, []initproto.PolicyRule{{Path: "/p/.env", Rule: "denyRead .env (default)"}}, rules)
	require.NoError(t, os.WriteFile(p, []byte(`{`), 0o644))
	_, err = LoadPolicyRules(p)
	assert.ErrorContains(t, err, "policy rules "+p)
}
