package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/pathtree"
)

// settingsKeys are the JSON keys of Settings, "section.key".
func settingsKeys() []string {
	var keys []string
	st := reflect.TypeFor[Settings]()
	for i := range st.NumField() {
		sec := st.Field(i)
		secName, _, _ := strings.Cut(sec.Tag.Get("json"), ",")
		for j := range sec.Type.NumField() {
			name, _, _ := strings.Cut(sec.Type.Field(j).Tag.Get("json"), ",")
			keys = append(keys, secName+"."+name)
		}
	}
	return keys
}

func TestEverySettingHasANarrowingRule(t *testing.T) {
	keys := settingsKeys()
	for _, k := range keys {
		assert.Contains(t, narrowing, k, "a new setting must say how an untrusted file may use it (narrow.go), and addNarrowing handle it")
	}
	assert.Len(t, narrowing, len(keys), "narrowing names a setting that does not exist")
}

// userPolicy is a user's policy: what the global file and flags give.
func userMerger() *Merger {
	m := NewMerger()
	m.Add(Settings{
		Filesystem:  FilesystemSettings{AllowWrite: []string{"build"}, AllowRead: []string{"public.pem"}},
		Environment: EnvironmentSettings{Pass: []string{"GOPATH"}, Set: map[string]string{"CI": "1"}},
		Limits:      LimitSettings{Memory: "2G", Pids: 100, CPUs: 2, TimeoutDefault: 60, MaxOutput: 1 << 20},
		Network:     NetworkSettings{Mode: NetworkAllowlist, AllowedDomains: []string{"proxy.golang.org"}},
	}, "global.json")
	return m
}

func TestAddNarrowingPerSetting(t *testing.T) {
	const proj = Source("proj.json")
	for _, tc := range []struct {
		name, key string
		s         Settings
		// widen: the setting is ignored (and reported); else taken.
		widen bool
		check func(t *testing.T, p Policy)
	}{
		{"denyRead added", "filesystem.denyRead", Settings{Filesystem: FilesystemSettings{DenyRead: []string{"secrets/"}}}, false,
			func(t *testing.T, p Policy) { assert.Contains(t, p.DenyRead, Rule{"secrets/", proj}) }},
		{"denyWrite added", "filesystem.denyWrite", Settings{Filesystem: FilesystemSettings{DenyWrite: []string{"Makefile"}}}, false,
			func(t *testing.T, p Policy) { assert.Contains(t, p.DenyWrite, Rule{"Makefile", proj}) }},
		{"allowRead of a denied .env", "filesystem.allowRead", Settings{Filesystem: FilesystemSettings{AllowRead: []string{".env"}}}, true,
			func(t *testing.T, p Policy) { assert.NotContains(t, Values(p.AllowRead), ".env") }},
		{"allowWrite outside the binds", "filesystem.allowWrite", Settings{Filesystem: FilesystemSettings{AllowWrite: []string{"~/.config", "/etc"}}}, true,
			func(t *testing.T, p Policy) { assert.Equal(t, []string{"build"}, Values(p.AllowWrite)) }},
		{"pass of tokens", "environment.pass", Settings{Environment: EnvironmentSettings{Pass: []string{"GITHUB_TOKEN", "AWS_*"}}}, true,
			func(t *testing.T, p Policy) { assert.Equal(t, []string{"GOPATH"}, Values(p.EnvPass)) }},
		{"set of a new variable", "environment.set", Settings{Environment: EnvironmentSettings{Set: map[string]string{"GOFLAGS": "-mod=mod"}}}, false,
			func(t *testing.T, p Policy) { assert.Equal(t, Value[string]{"-mod=mod", proj}, p.EnvSet["GOFLAGS"]) }},
		{"set over the user's", "environment.set", Settings{Environment: EnvironmentSettings{Set: map[string]string{"CI": "0"}}}, true,
			func(t *testing.T, p Policy) { assert.Equal(t, "1", p.EnvSet["CI"].Value) }},
		{"set over a passed one", "environment.set", Settings{Environment: EnvironmentSettings{Set: map[string]string{"PATH": "/tmp/evil"}}}, true,
			func(t *testing.T, p Policy) { assert.NotContains(t, p.EnvSet, "PATH") }},
		{"lower memory", "limits.memory", Settings{Limits: LimitSettings{Memory: "1G"}}, false,
			func(t *testing.T, p Policy) { assert.Equal(t, Value[int64]{1 << 30, proj}, p.Memory) }},
		{"higher memory", "limits.memory", Settings{Limits: LimitSettings{Memory: "64G"}}, true,
			func(t *testing.T, p Policy) { assert.Equal(t, int64(2<<30), p.Memory.Value) }},
		{"lower pids", "limits.pids", Settings{Limits: LimitSettings{Pids: 10}}, false,
			func(t *testing.T, p Policy) { assert.Equal(t, 10, p.Pids.Value) }},
		{"higher pids", "limits.pids", Settings{Limits: LimitSettings{Pids: 10000}}, true,
			func(t *testing.T, p Policy) { assert.Equal(t, 100, p.Pids.Value) }},
		{"lower cpus", "limits.cpus", Settings{Limits: LimitSettings{CPUs: 0.5}}, false,
			func(t *testing.T, p Policy) { assert.Equal(t, 0.5, p.CPUs.Value) }},
		{"higher cpus", "limits.cpus", Settings{Limits: LimitSettings{CPUs: 64}}, true,
			func(t *testing.T, p Policy) { assert.Equal(t, 2.0, p.CPUs.Value) }},
		{"lower timeout", "limits.timeoutDefault", Settings{Limits: LimitSettings{TimeoutDefault: 5}}, false,
			func(t *testing.T, p Policy) { assert.Equal(t, 5.0, p.TimeoutDefault.Value) }},
		{"higher timeout", "limits.timeoutDefault", Settings{Limits: LimitSettings{TimeoutDefault: 3600}}, true,
			func(t *testing.T, p Policy) { assert.Equal(t, 60.0, p.TimeoutDefault.Value) }},
		{"lower maxOutput", "limits.maxOutput", Settings{Limits: LimitSettings{MaxOutput: 1024}}, false,
			func(t *testing.T, p Policy) { assert.Equal(t, int64(1024), p.MaxOutput.Value) }},
		{"higher maxOutput", "limits.maxOutput", Settings{Limits: LimitSettings{MaxOutput: 1 << 30}}, true,
			func(t *testing.T, p Policy) { assert.Equal(t, int64(1<<20), p.MaxOutput.Value) }},
		{"stricter network", "network.mode", Settings{Network: NetworkSettings{Mode: NetworkDisabled}}, false,
			func(t *testing.T, p Policy) { assert.Equal(t, NetworkDisabled, p.NetworkMode.Value) }},
		{"network allow_all", "network.mode", Settings{Network: NetworkSettings{Mode: NetworkAllowAll}}, true,
			func(t *testing.T, p Policy) { assert.Equal(t, NetworkAllowlist, p.NetworkMode.Value) }},
		{"more allowed domains", "network.allowedDomains", Settings{Network: NetworkSettings{AllowedDomains: []string{"evil.example"}}}, true,
			func(t *testing.T, p Policy) { assert.Equal(t, []string{"proxy.golang.org"}, Values(p.AllowedDomains)) }},
		{"denied domains added", "network.deniedDomains", Settings{Network: NetworkSettings{DeniedDomains: []string{"ads.example"}}}, false,
			func(t *testing.T, p Policy) { assert.Equal(t, []string{"ads.example"}, Values(p.DeniedDomains)) }},
		{"a request rule", "network.requests", Settings{Network: NetworkSettings{Requests: []string{"* https://proxy.golang.org/"}}}, true,
			func(t *testing.T, p Policy) { assert.Empty(t, p.Requests) }},
		{"a CA file", "network.caFiles", Settings{Network: NetworkSettings{CAFiles: []string{"/tmp/evil.pem"}}}, true,
			func(t *testing.T, p Policy) { assert.Empty(t, p.CAFiles) }},
		{"ask", "network.ask", Settings{Network: NetworkSettings{Ask: true}}, true,
			func(t *testing.T, p Policy) { assert.False(t, p.NetworkAsk.Value) }},
		{"a secret file", "network.secretFiles", Settings{Network: NetworkSettings{SecretFiles: []SecretFileSetting{{Path: "/home/u/.npmrc", Hosts: []string{"evil.example"}}}}}, true,
			func(t *testing.T, p Policy) { assert.Empty(t, p.SecretFiles) }},
		{"a secret", "network.secrets", Settings{Network: NetworkSettings{Secrets: []SecretSetting{{Env: "GH_TOKEN", Hosts: []string{"evil.example"}}}}}, true,
			func(t *testing.T, p Policy) { assert.Empty(t, p.Secrets) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := userMerger()
			ignored := m.addNarrowing(tc.s, proj)
			if tc.widen {
				require.Len(t, ignored, 1)
				assert.True(t, strings.HasPrefix(ignored[0], tc.key), "%q names the setting", ignored[0])
			} else {
				assert.Empty(t, ignored)
			}
			tc.check(t, m.Policy())
		})
	}
}

func TestAddNarrowingOverDefaults(t *testing.T) {
	// No user limits or network mode: any limit is lower, any mode but
	// allow_all stricter, and an allowlist may name its domains.
	m := NewMerger()
	ignored := m.addNarrowing(Settings{
		Limits:  LimitSettings{Memory: "1G", Pids: 50, MaxOutput: 100 << 20},
		Network: NetworkSettings{Mode: NetworkAllowlist, AllowedDomains: []string{"registry.npmjs.org"}},
	}, "p")
	assert.Equal(t, []string{"limits.maxOutput 104857600"}, ignored, "above the built-in 10M")
	p := m.Policy()
	assert.Equal(t, int64(1<<30), p.Memory.Value)
	assert.Equal(t, 50, p.Pids.Value)
	mode, _ := p.Network()
	assert.Equal(t, NetworkAllowlist, mode)
	assert.Equal(t, []string{"registry.npmjs.org"}, Values(p.AllowedDomains), "allow_all to an allowlist narrows")

	m = NewMerger()
	m.Add(Settings{Network: NetworkSettings{Mode: NetworkDisabled}}, "--new-net-ns")
	ignored = m.addNarrowing(Settings{Network: NetworkSettings{Mode: NetworkAllowlist, AllowedDomains: []string{"x.org"}}}, "p")
	assert.Equal(t, []string{`network.mode "allowlist"`, `network.allowedDomains ["x.org"]`}, ignored)
	mode, _ = m.Policy().Network()
	assert.Equal(t, NetworkDisabled, mode)
}

// project makes a project directory with the settings file content.
func project(t *testing.T, content string) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, ".boxsh", "policy.json")
	writeSettings(t, file, content)
	return dir, file
}

const widening = `{"filesystem": {"allowRead": [".env"], "allowWrite": ["/etc"], "denyRead": ["extra.secret"]}, "environment": {"pass": ["GITHUB_TOKEN"]}, "network": {"mode": "allow_all"}}`

// userHome is a home whose global file sets an allowlist.
func userHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	writeSettings(t, GlobalSettingsPath(home), `{"network": {"mode": "allowlist"}}`)
	return home
}

// requireNarrowed checks that the widening settings file was only allowed
// to narrow.
func requireNarrowed(t *testing.T, p Policy, file string) {
	t.Helper()
	assert.NotContains(t, Values(p.AllowRead), ".env")
	assert.Empty(t, p.AllowWrite)
	assert.Empty(t, p.EnvPass)
	assert.Equal(t, NetworkAllowlist, p.NetworkMode.Value)
	assert.Contains(t, Values(p.DenyRead), "extra.secret", "narrowing settings still apply")
	require.Len(t, p.Untrusted, 1)
	assert.Equal(t, file, p.Untrusted[0].Path)
	w := UntrustedWarning(p.Untrusted[0])
	assert.Contains(t, w, file)
	for _, k := range []string{`filesystem.allowRead [".env"]`, "filesystem.allowWrite", "environment.pass", `network.mode "allow_all"`} {
		assert.Contains(t, w, k)
	}
	assert.NotContains(t, w, "\n", "one line")
}

func TestProjectFileNarrowsUnlessTrusted(t *testing.T) {
	home := userHome(t)
	dir, file := project(t, widening)

	p, err := Load(LoadConfig{Home: home, Dir: dir})
	require.NoError(t, err)
	requireNarrowed(t, p, file)
	assert.Contains(t, UntrustedWarning(p.Untrusted[0]), "boxsh policy trust "+file)

	entry, err := Trust(TrustStorePath(home), file)
	require.NoError(t, err)
	fi, err := os.Stat(TrustStorePath(home))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.Len(t, entry.SHA256, 64)

	p, err = Load(LoadConfig{Home: home, Dir: dir})
	require.NoError(t, err)
	assert.Empty(t, p.Untrusted)
	assert.Contains(t, Values(p.AllowRead), ".env", "a trusted file widens")
	assert.Equal(t, NetworkAllowAll, p.NetworkMode.Value)

	// A changed file is untrusted again.
	writeSettings(t, file, strings.Replace(widening, "GITHUB_TOKEN", "NPM_TOKEN", 1))
	p, err = Load(LoadConfig{Home: home, Dir: dir})
	require.NoError(t, err)
	requireNarrowed(t, p, file)

	// Untrust.
	writeSettings(t, file, widening)
	found, err := Untrust(TrustStorePath(home), file)
	require.NoError(t, err)
	assert.True(t, found)
	p, err = Load(LoadConfig{Home: home, Dir: dir})
	require.NoError(t, err)
	requireNarrowed(t, p, file)
	found, err = Untrust(TrustStorePath(home), file)
	require.NoError(t, err)
	assert.False(t, found)
}

func TestTrustIsByPathAndContent(t *testing.T) {
	home := userHome(t)
	_, trustedFile := project(t, widening)
	_, err := Trust(TrustStorePath(home), trustedFile)
	require.NoError(t, err)

	// The same bytes in another project are not trusted: relative rules
	// mean other paths there.
	other, otherFile := project(t, widening)
	p, err := Load(LoadConfig{Home: home, Dir: other})
	require.NoError(t, err)
	requireNarrowed(t, p, otherFile)

	// A policy.json that is a symbolic link to the trusted file.
	linked := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(linked, ".boxsh"), 0o755))
	require.NoError(t, os.Symlink(trustedFile, filepath.Join(linked, ".boxsh", "policy.json")))
	p, err = Load(LoadConfig{Home: home, Dir: linked})
	require.NoError(t, err)
	requireNarrowed(t, p, ProjectSettingsPath(linked))
	assert.Contains(t, UntrustedWarning(p.Untrusted[0]), "cannot be trusted: it or its directory is a symbolic link")
	_, err = Trust(TrustStorePath(home), ProjectSettingsPath(linked))
	assert.ErrorContains(t, err, "cannot be trusted")

	// A .boxsh that is a symbolic link to the trusted project's.
	linkedDir := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Dir(trustedFile), filepath.Join(linkedDir, ".boxsh")))
	p, err = Load(LoadConfig{Home: home, Dir: linkedDir})
	require.NoError(t, err)
	requireNarrowed(t, p, ProjectSettingsPath(linkedDir))

	// The project reached through a symbolic link to its directory is the
	// same project: still trusted.
	alias := filepath.Join(t.TempDir(), "alias")
	require.NoError(t, os.Symlink(filepath.Dir(filepath.Dir(trustedFile)), alias))
	p, err = Load(LoadConfig{Home: home, Dir: alias})
	require.NoError(t, err)
	assert.Empty(t, p.Untrusted)
}

func TestProjectFileInParentIsNotRead(t *testing.T) {
	home := userHome(t)
	dir, _ := project(t, widening)
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	p, err := Load(LoadConfig{Home: home, Dir: sub})
	require.NoError(t, err)
	assert.Empty(t, p.Untrusted)
	assert.Equal(t, []string{GlobalSettingsPath(home)}, p.Files, "only the working directory's .boxsh counts")
}

func TestPolicyFileInWritableBindNarrowsUnlessTrusted(t *testing.T) {
	home := userHome(t)
	work := t.TempDir()
	file := filepath.Join(work, "agent-policy.json")
	writeSettings(t, file, widening)
	writable := func(p string) bool { return pathtree.Within(p, work) }

	p, err := Load(LoadConfig{Home: home, Dir: t.TempDir(), PolicyFile: file})
	require.NoError(t, err)
	assert.Empty(t, p.Untrusted, "a --policy file no sandbox can write is the user's")
	assert.Contains(t, Values(p.AllowRead), ".env")

	p, err = Load(LoadConfig{Home: home, Dir: t.TempDir(), PolicyFile: file, Writable: writable})
	require.NoError(t, err)
	requireNarrowed(t, p, file)

	// Writable through the user's own allowWrite.
	writeSettings(t, GlobalSettingsPath(home), `{"network": {"mode": "allowlist"}, "filesystem": {"allowWrite": ["`+work+`"]}}`)
	p, err = Load(LoadConfig{Home: home, Dir: t.TempDir(), PolicyFile: file, Writable: func(string) bool { return false }})
	require.NoError(t, err)
	require.Len(t, p.Untrusted, 1)
	assert.Equal(t, file, p.Untrusted[0].Path)
	assert.NotContains(t, Values(p.AllowRead), ".env")
	writeSettings(t, GlobalSettingsPath(home), `{"network": {"mode": "allowlist"}}`)

	_, err = Trust(TrustStorePath(home), file)
	require.NoError(t, err)
	p, err = Load(LoadConfig{Home: home, Dir: t.TempDir(), PolicyFile: file, Writable: writable})
	require.NoError(t, err)
	assert.Empty(t, p.Untrusted)
}

func TestFlagsWinOverTheUsersFilesButNotOverNarrowing(t *testing.T) {
	home := userHome(t)
	dir, _ := project(t, `{"limits": {"memory": "1G"}, "network": {"mode": "disabled"}}`)
	p, err := Load(LoadConfig{Home: home, Dir: dir, Flags: []FlagSettings{
		{"--memory", Settings{Limits: LimitSettings{Memory: "4G"}}},
		{"--network", Settings{Network: NetworkSettings{Mode: NetworkAllowAll}}},
	}})
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), p.Memory.Value, "an untrusted file narrows what the flags allow")
	assert.Equal(t, NetworkDisabled, p.NetworkMode.Value)
	require.Len(t, p.Untrusted, 1)
	assert.Empty(t, p.Untrusted[0].Ignored)
	assert.Empty(t, UntrustedWarning(p.Untrusted[0]), "nothing ignored, nothing to say")
}

func TestTrustStoreLocation(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	assert.Equal(t, filepath.Join(home, ".config", "boxsh", "trusted.json"), TrustStorePath(home))
	t.Setenv("XDG_CONFIG_HOME", "relative/dir")
	assert.Equal(t, filepath.Join(home, ".config", "boxsh", "trusted.json"), TrustStorePath(home), "a relative XDG_CONFIG_HOME is ignored, as XDG says")
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	assert.Equal(t, "/cfg/boxsh/trusted.json", TrustStorePath(home))
	assert.Equal(t, "/cfg/boxsh/policy.json", GlobalSettingsPath(home))
}

func TestReadSettingsFileRefusesFIFOsAndHugeFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, ".boxsh", "policy.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(fifo), 0o755))
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	done := make(chan error, 1)
	go func() {
		_, err := Load(LoadConfig{Home: t.TempDir(), Dir: dir})
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorContains(t, err, "not a regular file")
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO project file blocked")
	}

	big := filepath.Join(t.TempDir(), "big.json")
	require.NoError(t, os.WriteFile(big, []byte(`{}`+strings.Repeat(" ", maxSettingsSize)), 0o644))
	_, err := ReadSettingsFile(big)
	assert.ErrorContains(t, err, "larger than")
}

func TestTrustedFileHashIsOfTheBytesParsed(t *testing.T) {
	home := userHome(t)
	dir, file := project(t, widening)
	sf, err := ReadSettingsFile(file)
	require.NoError(t, err)
	_, err = Trust(TrustStorePath(home), file)
	require.NoError(t, err)
	store, err := LoadTrustStore(TrustStorePath(home))
	require.NoError(t, err)
	require.Len(t, store.Files, 1)
	assert.Equal(t, sf.SHA256, store.Files[0].SHA256)
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(real, ".boxsh", "policy.json"), store.Files[0].Path)

	// Trusting it again replaces the entry rather than adding one.
	_, err = Trust(TrustStorePath(home), file)
	require.NoError(t, err)
	store, err = LoadTrustStore(TrustStorePath(home))
	require.NoError(t, err)
	assert.Len(t, store.Files, 1)

	// A file that does not parse cannot be trusted.
	writeSettings(t, file, `{"nope": 1}`)
	_, err = Trust(TrustStorePath(home), file)
	assert.ErrorContains(t, err, `unknown key "nope"`)
}
