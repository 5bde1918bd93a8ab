package runtime

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/darwin"
	"github.com/boxsh/boxsh/policy"
)

// seatbeltDir is a temporary directory with a project reached through a
// symbolic link: dir/real/proj, and dir/link -> dir/real.
func seatbeltDir(t *testing.T) (dir, real, link string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	real, link = filepath.Join(dir, "real"), filepath.Join(dir, "link")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "proj", "config"), 0o755))
	require.NoError(t, os.Symlink(real, link))
	return dir, real, link
}

func testSandbox(binds ...policy.Bind) policy.Sandbox {
	return policy.Sandbox{Enabled: true, Binds: binds}
}

// Issue 29, item 10: binds, the working directory, $HOME, $TMPDIR and
// the policy's absolute paths are resolved before the rules are written.
func TestSeatbeltConfigResolvesPaths(t *testing.T) {
	dir, real, link := seatbeltDir(t)
	require.NoError(t, os.MkdirAll(filepath.Join(real, "T"), 0o755))
	in := SeatbeltInputs{
		Sandbox: testSandbox(
			policy.Bind{Mode: policy.ReadWrite, Src: link + "/proj", Dst: link + "/proj"},
			policy.Bind{Mode: policy.CopyOnWrite, Src: link + "/proj/config", Dst: link + "/work/new"},
		),
		Policy: policy.Policy{
			DenyRead:  []policy.Rule{{Value: "config/secret.yaml"}, {Value: link + "/proj/abs"}},
			DenyWrite: []policy.Rule{{Value: "~/.x"}},
		},
		Home: link, Cwd: link + "/proj", TmpDir: link + "/T/",
	}
	cfg, err := SeatbeltConfig(in)
	require.NoError(t, err)
	assert.Equal(t, real+"/proj", cfg.Sandbox.Binds[0].Src)
	assert.Equal(t, real+"/proj", cfg.Sandbox.Binds[0].Dst)
	assert.Equal(t, real+"/proj/config", cfg.Sandbox.Binds[1].Src)
	assert.Equal(t, real+"/work/new", cfg.Sandbox.Binds[1].Dst, "a missing destination below the resolved prefix")
	assert.Equal(t, real, cfg.Home)
	assert.Equal(t, real+"/proj", cfg.Cwd)
	assert.Equal(t, real+"/T", cfg.TmpDir)
	assert.Equal(t, real+"/proj/abs", cfg.Policy.DenyRead[1].Value)
	assert.Equal(t, "config/secret.yaml", cfg.Policy.DenyRead[0].Value, "relative to the resolved cwd")
	assert.Equal(t, link, in.Home, "the inputs are not changed")

	// In the profile: the resolved paths, nothing through the link.
	profile, err := darwin.Generate(cfg)
	require.NoError(t, err)
	private := "/private" + real // Generate rewrites /tmp to /private/tmp (macOS)
	if !strings.HasPrefix(real, "/tmp/") {
		private = real
	}
	assert.Contains(t, profile, "(allow file-read* file-write*\n  (subpath \""+private+"/proj\"))")
	assert.NotContains(t, profile, "/link/")
	assert.Contains(t, profile, "; denyRead config/secret.yaml\n")

	// The working directory in a cow source is the same place in its
	// destination.
	in.Cwd = link + "/proj/config"
	_, wd, err := SeatbeltArgs(in, []string{"/bin/sh"})
	require.NoError(t, err)
	assert.Equal(t, real+"/work/new", wd)
	_ = dir
}

// Issue 29, item 6: the .git control files of the repositories that exist
// in a wr bind are protected by path; the profile does not deny .git/
// entries by name, so that git init and git clone work.
func TestSeatbeltConfigProtectsExistingRepositories(t *testing.T) {
	_, real, _ := seatbeltDir(t)
	repo := filepath.Join(real, "proj", "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "config"), nil, 0o644))
	cfg, err := SeatbeltConfig(SeatbeltInputs{
		Sandbox: testSandbox(policy.Bind{Mode: policy.ReadWrite, Src: real + "/proj", Dst: real + "/proj"}),
		Policy:  policy.Policy{Protect: []policy.Rule{{Value: ".envrc"}}},
		Home:    "/nonexistent", Cwd: real + "/proj",
	})
	require.NoError(t, err)
	var paths []string
	for _, p := range cfg.Protected {
		paths = append(paths, p.Path)
	}
	for _, want := range []string{".git/config", ".git/hooks", ".git/info", ".git/commondir"} {
		assert.Contains(t, paths, filepath.Join(repo, want))
	}
	for _, e := range cfg.HardDenied {
		assert.False(t, strings.HasPrefix(e, ".git/"), "no .git/ entry by name: %s", e)
	}
	assert.Contains(t, cfg.HardDenied, ".bashrc")
	assert.Contains(t, cfg.HardDenied, ".envrc", "the policy's filesystem.protect entries")
	assert.True(t, slices.ContainsFunc(cfg.Protected, func(p darwin.Protected) bool {
		return p.Path == filepath.Join(repo, ".git", "hooks") && p.Dir
	}))
}

// Issue 29, item 12: the network mode is the policy's, resolved.
func TestSeatbeltConfigNetwork(t *testing.T) {
	m := policy.NewMerger()
	m.Add(policy.Settings{Network: policy.NetworkSettings{Mode: policy.NetworkDisabled}}, "flags")
	cfg, err := SeatbeltConfig(SeatbeltInputs{Sandbox: testSandbox(), Policy: m.Policy()})
	require.NoError(t, err)
	assert.Equal(t, darwin.NetworkDisabled, cfg.Network)

	cfg, err = SeatbeltConfig(SeatbeltInputs{Sandbox: policy.Sandbox{Enabled: true, NewNetNS: true}, Policy: policy.NewMerger().Policy()})
	require.NoError(t, err)
	assert.Equal(t, darwin.NetworkDisabled, cfg.Network)

	cfg, err = SeatbeltConfig(SeatbeltInputs{Sandbox: testSandbox(), Policy: policy.NewMerger().Policy()})
	require.NoError(t, err)
	assert.Equal(t, darwin.NetworkAllowAll, cfg.Network)
}

// Issue 29, item 8: in allowlist mode the front starts its proxy on the
// loopback, the profile reaches its port only, and the commands get the
// proxy variables.
func TestSeatbeltProxy(t *testing.T) {
	m := policy.NewMerger()
	m.Add(policy.Settings{Network: policy.NetworkSettings{Mode: policy.NetworkAllowlist, AllowedDomains: []string{"example.com"}}}, "flags")
	in := SeatbeltInputs{Sandbox: testSandbox(), Policy: m.Policy(), Home: t.TempDir(), Cwd: t.TempDir()}
	env, stop, err := startSeatbeltProxy(&in, []string{"PATH=/bin", "HTTP_PROXY=http://elsewhere:1"}, nil)
	require.NoError(t, err)
	defer stop()
	require.Positive(t, in.ProxyPort)
	addr := net.JoinHostPort("127.0.0.1", itoa(in.ProxyPort))
	assert.Contains(t, env, "HTTP_PROXY=http://"+addr)
	assert.Contains(t, env, "https_proxy=http://"+addr)
	assert.Contains(t, env, "ALL_PROXY=socks5h://"+addr)
	assert.NotContains(t, env, "HTTP_PROXY=http://elsewhere:1")
	assert.Contains(t, env, "PATH=/bin")

	args, _, err := SeatbeltArgs(in, []string{"/bin/sh"})
	require.NoError(t, err)
	assert.Contains(t, args[2], `(allow network-outbound (remote ip "localhost:`+itoa(in.ProxyPort)+`"))`)

	// The proxy answers there, and refuses what the policy does not allow.
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Write([]byte("CONNECT other.example.org:443 HTTP/1.1\r\nHost: other.example.org:443\r\n\r\n"))
	require.NoError(t, err)
	status, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, status, " 403 ")

	stop()
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "stopped")

	// Without allowlist, nothing starts.
	in = SeatbeltInputs{Sandbox: testSandbox(), Policy: policy.NewMerger().Policy()}
	env, stop, err = startSeatbeltProxy(&in, []string{"A=1"}, nil)
	require.NoError(t, err)
	stop()
	assert.Equal(t, []string{"A=1"}, env)
	assert.Zero(t, in.ProxyPort)
}

// Issue 29, item 4: a missing cow destination is made, not an error.
func TestPrepareCowDst(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "a", "b")
	require.NoError(t, prepareCowDst(policy.Bind{Mode: policy.CopyOnWrite, Src: dir, Dst: dst}))
	fi, err := os.Stat(dst)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	require.NoError(t, prepareCowDst(policy.Bind{Mode: policy.CopyOnWrite, Src: dir, Dst: dst}), "an existing one is kept")

	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	assert.Error(t, prepareCowDst(policy.Bind{Mode: policy.CopyOnWrite, Src: dir, Dst: file}))
}

func itoa(n int) string { return strconv.Itoa(n) }

// Issue 29, item 11: the shared temporary directories are read-only, so
// each sandbox gets one of its own in $TMPDIR, named in TMPDIR (and zsh's
// TMPPREFIX), writable in its profile, removed at the end.
func TestStartSeatbeltPrivateTmp(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	in := SeatbeltInputs{Sandbox: testSandbox(), Policy: policy.NewMerger().Policy(), Home: t.TempDir(), Cwd: t.TempDir(), TmpDir: base}
	sc, err := StartSeatbelt(in, []string{"TMPDIR=/elsewhere", "A=1"}, []string{"/bin/sh"}, nil)
	require.NoError(t, err)
	tmp := sc.Inputs.PrivateTmp
	assert.Equal(t, base, filepath.Dir(tmp))
	assert.True(t, strings.HasPrefix(filepath.Base(tmp), "boxsh-sandbox-"))
	require.DirExists(t, tmp)
	assert.Equal(t, []string{"A=1", "TMPDIR=" + tmp + "/", "TMPPREFIX=" + tmp + "/zsh"}, sc.Env)
	private := tmp
	if strings.HasPrefix(tmp, "/tmp/") {
		private = "/private" + tmp
	}
	assert.Contains(t, sc.Args[2], `(subpath "`+private+`")`)
	assert.Contains(t, sc.Args[2], `(allow file-read* (subpath "/private/tmp"))`)
	sc.Stop()
	assert.NoDirExists(t, tmp)
}
