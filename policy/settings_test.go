package policy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSettingsErrorsNameFileKeyAndExpectation(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"unknown key", `{"filesystem": {"denyReads": []}}`, `policy p.json: unknown key "denyReads"`},
		{"wrong type", "{\n\"limits\": {\"pids\": \"many\"}}", `policy p.json: line 2: limits.pids: expected a whole number, got string`},
		{"list expected", `{"filesystem": {"denyRead": ".env"}}`, `filesystem.denyRead: expected a list of strings, got string`},
		{"syntax", `{"filesystem": {`, `policy p.json: line 1: invalid JSON`},
		{"empty", ``, `policy p.json: empty file: expected a JSON object`},
		{"trailing", `{} {}`, `unexpected content after the settings object`},
		{"bad size", `{"limits": {"memory": "lots"}}`, `limits.memory: expected a size such as 512M or 2G, got "lots"`},
		{"negative", `{"limits": {"cpus": -1}}`, `limits.cpus: expected a positive number`},
		{"too broad", `{"filesystem": {"allowWrite": ["/"]}}`, `filesystem.allowWrite: "/": too broad`},
		{"tilde user", `{"filesystem": {"denyRead": ["~bob/.ssh"]}}`, `only "~/" is expanded`},
		{"bad pattern", `{"filesystem": {"denyRead": ["[.env"]}}`, `bad pattern`},
		{"bad variable", `{"environment": {"pass": ["MY-VAR"]}}`, `environment.pass: "MY-VAR": expected a variable name`},
		{"set with star", `{"environment": {"set": {"A*": "x"}}}`, `environment.set: "A*": expected a variable name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSettings("p.json", []byte(tc.json))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "1K": 1024, "512M": 512 << 20, "2G": 2 << 30, "1.5G": 3 << 29, "2GiB": 2 << 30, "64mb": 64 << 20} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "G", "-1M", "0", "12X", "1e30T"} {
		_, err := ParseSize(in)
		assert.Error(t, err, in)
	}
}

func writeSettings(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestLoadMergesInOrderWithSources(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	global := filepath.Join(home, ".config", "boxsh", "policy.json")
	writeSettings(t, global, `{"filesystem": {"denyRead": ["*.secret", ".env"]}, "limits": {"memory": "1G", "pids": 100}, "environment": {"set": {"A": "global"}}}`)
	proj := filepath.Join(project, ".boxsh", "policy.json")
	writeSettings(t, proj, `{"filesystem": {"allowWrite": ["build"]}, "limits": {"memory": "2G"}, "environment": {"set": {"A": "project"}, "pass": ["GOPATH"]}}`)
	extra := filepath.Join(t.TempDir(), "ci.json")
	writeSettings(t, extra, `{"limits": {"pids": 50}}`)

	_, err := Trust(TrustStorePath(home), proj)
	require.NoError(t, err, "a trusted project file merges like the user's")
	p, err := Load(LoadConfig{Home: home, Dir: project, PolicyFile: extra, Flags: []FlagSettings{{"--pids", Settings{Limits: LimitSettings{Pids: 64}}}}})
	require.NoError(t, err)

	assert.Equal(t, []string{global, proj, extra}, p.Files)
	assert.Contains(t, p.DenyRead, Rule{"*.secret", Source(global)})
	assert.Contains(t, p.DenyRead, Rule{".env", sourceDefault}, "a rule the defaults have keeps its first source")
	assert.Contains(t, p.DenyRead, Rule{"~/.ssh", sourceDefault})
	assert.Equal(t, []Rule{{"build", Source(proj)}}, p.AllowWrite)
	assert.Equal(t, Value[int64]{2 << 30, Source(proj)}, p.Memory, "the project wins over the global file")
	assert.Equal(t, Value[int]{64, "--pids"}, p.Pids, "flags win over files")
	assert.Equal(t, Value[string]{"project", Source(proj)}, p.EnvSet["A"])
	assert.Equal(t, []Rule{{"GOPATH", Source(proj)}}, p.EnvPass)
	assert.False(t, p.CPUs.Set())
	assert.Empty(t, p.Untrusted)
}

func TestLoadMissingFiles(t *testing.T) {
	p, err := Load(LoadConfig{Home: t.TempDir(), Dir: t.TempDir()})
	require.NoError(t, err, "global and project files are optional")
	assert.Empty(t, p.Files)

	_, err = Load(LoadConfig{Home: t.TempDir(), Dir: t.TempDir(), PolicyFile: "/nonexistent/policy.json"})
	require.Error(t, err, "--policy must exist")
	assert.Contains(t, err.Error(), "policy /nonexistent/policy.json")

	project := t.TempDir()
	writeSettings(t, filepath.Join(project, ".boxsh", "policy.json"), `{"nope": 1}`)
	_, err = Load(LoadConfig{Home: t.TempDir(), Dir: project})
	require.Error(t, err, "a broken project file is an error, not skipped")
	assert.Contains(t, err.Error(), `unknown key "nope"`)
}

func TestDefaultSettingsRoundTrip(t *testing.T) {
	s := DefaultSettings()
	assert.Contains(t, s.Filesystem.DenyRead, "~/.ssh")
	assert.Contains(t, s.Filesystem.DenyRead, ".env")
	b, err := MarshalSettings(s)
	require.NoError(t, err)
	back, err := parseSettings("defaults", b)
	require.NoError(t, err)
	assert.Equal(t, s, back)
}

func TestNetworkSettings(t *testing.T) {
	s, err := parseSettings("n.json", []byte(`{"network": {"mode": "allowlist", "allowedDomains": ["registry.npmjs.org", "*.github.com:443"], "deniedDomains": ["ads.github.com"]}}`))
	require.NoError(t, err)
	m := NewMerger()
	m.Add(s, "n.json")
	m.Add(Settings{Network: NetworkSettings{AllowedDomains: []string{"pypi.org"}}}, "--allow-domain")
	p := m.Policy()
	mode, own := p.Network()
	assert.Equal(t, NetworkAllowlist, mode)
	assert.True(t, own)
	assert.Equal(t, []Rule{{"registry.npmjs.org", "n.json"}, {"*.github.com:443", "n.json"}, {"pypi.org", "--allow-domain"}}, p.AllowedDomains)
	assert.Equal(t, []Rule{{"ads.github.com", "n.json"}}, p.DeniedDomains)

	mode, own = Policy{}.Network()
	assert.Equal(t, NetworkAllowAll, mode, "the default")
	assert.False(t, own)

	_, err = parseSettings("n.json", []byte(`{"network": {"mode": "some"}}`))
	assert.ErrorContains(t, err, `network.mode: expected disabled, allow_all or allowlist, got "some"`)
	_, err = parseSettings("n.json", []byte(`{"network": {"allowedDomains": ["http://x.org/"]}}`))
	assert.ErrorContains(t, err, `network.allowedDomains: "http://x.org/": expected a domain name`)
}

// TestNetworkSecrets checks network.secrets: merged by variable, a later
// setting replacing an earlier one, and checked.
func TestNetworkSecrets(t *testing.T) {
	s, err := parseSettings("n.json", []byte(`{"network": {"secrets": [{"env": "GH_TOKEN", "hosts": ["api.github.com"], "headers": ["X-Api-Key"]}, {"env": "NPM_TOKEN", "hosts": ["registry.npmjs.org"]}]}}`))
	require.NoError(t, err)
	assert.True(t, s.Restricts(), "a secret needs the sandbox's proxy")
	m := NewMerger()
	m.Add(s, "n.json")
	m.Add(Settings{Network: NetworkSettings{Secrets: []SecretSetting{{Env: "GH_TOKEN", Hosts: []string{"*.github.com"}}}}}, "--secret")
	assert.Equal(t, []Secret{
		{SecretSetting{Env: "NPM_TOKEN", Hosts: []string{"registry.npmjs.org"}}, "n.json"},
		{SecretSetting{Env: "GH_TOKEN", Hosts: []string{"*.github.com"}}, "--secret"},
	}, m.Policy().Secrets)

	for doc, want := range map[string]string{
		`{"network": {"secrets": [{"env": "", "hosts": ["a.example"]}]}}`:                              `network.secrets: env "": expected a variable name`,
		`{"network": {"secrets": [{"env": "GH_*", "hosts": ["a.example"]}]}}`:                          `network.secrets: env "GH_*": expected a variable name`,
		`{"network": {"secrets": [{"env": "GH_TOKEN"}]}}`:                                              `network.secrets: GH_TOKEN: hosts: name the domains the secret is for`,
		`{"network": {"secrets": [{"env": "GH_TOKEN", "hosts": ["https://a.example/"]}]}}`:             `network.secrets: GH_TOKEN: hosts: "https://a.example/": expected a domain name`,
		`{"network": {"secrets": [{"env": "GH_TOKEN", "hosts": ["a.example"], "headers": ["X: y"]}]}}`: `network.secrets: GH_TOKEN: headers: "X: y": expected a header name`,
		`{"network": {"secrets": [{"env": "GH_TOKEN", "hosts": ["a.example"], "value": "x"}]}}`:        `value`,
	} {
		_, err := parseSettings("n.json", []byte(doc))
		assert.ErrorContains(t, err, want, doc)
	}
}

// Allowed domains without a mode mean the allowlist, not the open network
// (issue 24).
func TestNetworkAllowedDomainsMeanAllowlist(t *testing.T) {
	m := NewMerger()
	m.Add(Settings{Network: NetworkSettings{AllowedDomains: []string{"example.com"}}}, "f")
	mode, own := m.Policy().Network()
	assert.Equal(t, NetworkAllowlist, mode)
	assert.True(t, own)
	m.Add(Settings{Network: NetworkSettings{Mode: NetworkAllowAll}}, "g")
	mode, _ = m.Policy().Network()
	assert.Equal(t, NetworkAllowAll, mode, "a mode named wins")
}

func TestSettingsRestricts(t *testing.T) {
	assert.False(t, Settings{}.Restricts())
	assert.False(t, Settings{Environment: EnvironmentSettings{Pass: []string{"X"}}, Limits: LimitSettings{Pids: 3}}.Restricts())
	assert.True(t, Settings{Filesystem: FilesystemSettings{DenyRead: []string{".env"}}}.Restricts())
	assert.True(t, Settings{Network: NetworkSettings{Mode: NetworkDisabled}}.Restricts())
	assert.True(t, Settings{Network: NetworkSettings{AllowedDomains: []string{"x.org"}}}.Restricts())
}
