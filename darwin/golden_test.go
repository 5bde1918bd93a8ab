package darwin

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// hardDenied is a sample of the list boxsh passes as
// ProfileConfig.HardDenied (the protected list without its .git/ entries,
// which come as Protected paths of the repositories that exist).
var hardDenied = []string{
	".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile",
	".gitconfig", ".gitmodules",
	".mcp.json", ".ripgreprc", ".vscode/", ".idea/",
	".claude/commands/", ".claude/agents/",
}

// protectedRepo is what the front finds of a repository in a wr bind.
func protectedRepo(gitDir string) []Protected {
	return []Protected{
		{Path: gitDir + "/config", Reason: "the repository's configuration"},
		{Path: gitDir + "/hooks", Dir: true, Reason: "git runs hooks"},
		{Path: gitDir + "/info", Dir: true, Reason: "info/attributes"},
	}
}

const (
	home   = "/Users/u"
	proj   = "/Users/u/proj"
	tmpDir = "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/"
)

func bind(t *testing.T, spec string) policy.Bind {
	t.Helper()
	b, err := policy.ParseBind(spec, proj)
	require.NoError(t, err)
	return b
}

func sandbox(t *testing.T, binds ...string) policy.Sandbox {
	sb := policy.Sandbox{Enabled: true}
	for _, s := range binds {
		sb.Binds = append(sb.Binds, bind(t, s))
	}
	return sb
}

// testPolicy is the default policy with a global and a project settings
// file on top.
func testPolicy(t *testing.T) policy.Policy {
	m := policy.NewMerger()
	m.Add(policy.Settings{Filesystem: policy.FilesystemSettings{
		AllowRead:  []string{"~/.ssh/known_hosts", ".env.example"},
		AllowWrite: []string{"~/.cache/go-build", "~/Library/Caches/*"},
	}}, "/Users/u/.config/boxsh/policy.json")
	m.Add(policy.Settings{Filesystem: policy.FilesystemSettings{
		DenyRead:   []string{"config/secrets.yaml", "credentials (old).json"},
		AllowWrite: []string{"*.log"},
		DenyWrite:  []string{"config/prod.yaml", "*.lock", "/Users/u/proj/docs/releases/*/notes.md"},
	}}, "/Users/u/proj/.boxsh/policy.json")
	return m.Policy()
}

func goldenConfigs(t *testing.T) map[string]ProfileConfig {
	return map[string]ProfileConfig{
		// A sandbox with binds of every mode and no policy.
		"binds": {
			Sandbox: sandbox(t, "ro:/Users/u/src", "wr:"+proj, "ro:vendor", "cow:/Users/u/lib:/Users/u/lib.work"),
			Home:    home, Cwd: proj, TmpDir: tmpDir,
			Network: NetworkAllowAll,
		},
		// The project writable, with the default policy and settings files.
		"policy": {
			Sandbox: sandbox(t, "wr:"+proj, "ro:/Users/u/src"),
			Policy:  testPolicy(t),
			Home:    home, Cwd: proj, TmpDir: tmpDir,
			Network: NetworkAllowAll,
		},
		// --new-net-ns: no network.
		"network_disabled": {
			Sandbox: func() policy.Sandbox {
				sb := sandbox(t, "wr:"+proj)
				sb.NewNetNS = true
				return sb
			}(),
			Home: home, Cwd: proj, TmpDir: tmpDir,
		},
		// What --try makes of a shell in the project, with the home
		// directory writable through a bind besides, and the hard-denied
		// paths.
		"hard_denied": {
			Sandbox: func() policy.Sandbox {
				sb := sandbox(t, "wr:/Users/u/out", "ro:"+home, "cow:"+proj+":/Users/u/.boxsh-try-k3j4/work")
				sb.HostSystem = true
				return sb
			}(),
			Home: home, Cwd: proj, TmpDir: tmpDir,
			HardDenied: hardDenied,
			Protected:  protectedRepo("/Users/u/out/repo/.git"),
			Network:    NetworkAllowAll,
		},
		// --network allowlist: the proxy's port only.
		"allowlist": {
			Sandbox: func() policy.Sandbox {
				sb := sandbox(t, "wr:"+proj)
				sb.NewNetNS = true
				return sb
			}(),
			Home: home, Cwd: proj, TmpDir: tmpDir,
			Network: NetworkAllowlist, ProxyPort: 49152,
		},
		// All of it together, as boxsh will run it.
		"full": {
			Sandbox: func() policy.Sandbox {
				sb := sandbox(t, "wr:"+proj, "ro:/Users/u/src")
				sb.NewNetNS = true
				return sb
			}(),
			Policy: testPolicy(t),
			Home:   home, Cwd: proj, TmpDir: tmpDir, PrivateTmp: tmpDir + "boxsh-sandbox-XXXXXXXX",
			HardDenied: hardDenied,
			Protected:  protectedRepo(proj + "/.git"),
		},
	}
}

func TestGolden(t *testing.T) {
	for name, cfg := range goldenConfigs(t) {
		t.Run(name, func(t *testing.T) {
			got, err := Generate(cfg)
			require.NoError(t, err)
			file := filepath.Join("testdata", name+".sbpl")
			if *update {
				require.NoError(t, os.WriteFile(file, []byte(got), 0o644))
			}
			want, err := os.ReadFile(file)
			require.NoError(t, err, "run go test ./darwin -update to create the golden files")
			assert.Equal(t, string(want), got, "run go test ./darwin -update and review the difference")

			again, err := Generate(cfg)
			require.NoError(t, err)
			assert.Equal(t, got, again, "the profile must not change from one call to the next")
		})
	}
}
