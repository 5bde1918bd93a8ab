package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime"
	"github.com/boxsh/boxsh/runtime/host"
	"github.com/boxsh/boxsh/runtime/plan"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubSpecHost replaces the host facts and boxsh-init lookup of boxsh spec
// for one test; initPath "" means boxsh-init is not found.
func stubSpecHost(t *testing.T, initPath string) {
	t.Helper()
	oldHost, oldFind := specHostFacts, specFindInit
	t.Cleanup(func() { specHostFacts, specFindInit = oldHost, oldFind })
	specHostFacts = func() plan.HostFacts {
		return plan.HostFacts{
			System: []plan.HostPath{{Path: "/usr", Dir: true}, {Path: "/bin", Dir: true, Link: "usr/bin"}},
			Etc:    []plan.HostPath{{Path: "/etc/passwd"}, {Path: "/etc/localtime", Link: "/usr/share/zoneinfo/UTC"}},
		}
	}
	specFindInit = func() (string, error) {
		if initPath == "" {
			return "", errors.New("cannot find boxsh-init")
		}
		return initPath, nil
	}
}

// spec runs boxsh spec with args in cwd.
func spec(t *testing.T, cwd string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runSpec(args, cwd, &out, &errOut)
	return code, out.String(), errOut.String()
}

func decodeSpec(t *testing.T, out string) *specs.Spec {
	t.Helper()
	var s specs.Spec
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	return &s
}

func TestSpecDefault(t *testing.T) {
	stubSpecHost(t, "/opt/boxsh/boxsh-init")
	t.Setenv("HOME", "/home/u")
	dir := t.TempDir()
	code, out, errOut := spec(t, dir, "--workers", "2", "--shell", "/bin/bash", "--new-net-ns", "--bind", "wr:.")
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)
	assert.True(t, strings.HasSuffix(out, "}\n"))
	assert.Contains(t, out, "\n\t\"process\"", "indented with tabs, as runc writes it")

	s := decodeSpec(t, out)
	assert.Equal(t, []string{"/.boxsh/boxsh-init", "--workers", "2", "--shell", "/bin/bash", "--log-level", "warn"}, s.Process.Args)
	assert.Equal(t, dir, s.Process.Cwd, "the working directory is bound")
	assert.Equal(t, &specs.Root{Path: "rootfs", Readonly: true}, s.Root)
	assert.False(t, s.Process.Terminal)
	assert.Equal(t, version, s.Annotations[plan.VersionAnnotation])
	assert.Equal(t, uint32(os.Getuid()), s.Linux.UIDMappings[0].HostID)
	assert.Equal(t, uint32(os.Getgid()), s.Linux.GIDMappings[0].HostID)
	assert.Equal(t, specs.NetworkNamespace, s.Linux.Namespaces[len(s.Linux.Namespaces)-1].Type)

	var dsts []string
	for _, m := range s.Mounts {
		dsts = append(dsts, m.Destination)
	}
	assert.Equal(t, []string{"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/usr", "/etc/passwd", "/tmp", "/.boxsh/boxsh-init", "/home/u", dir}, dsts)
	assert.Equal(t, "/opt/boxsh/boxsh-init", s.Mounts[8].Source)
	assert.Equal(t, "tmpfs", s.Mounts[9].Type, "the home is the sandbox's own")
	assert.Equal(t, []string{"rbind", "rw", "nosuid", "nodev"}, s.Mounts[10].Options)
}

func TestSpecCommand(t *testing.T) {
	stubSpecHost(t, "")
	code, out, errOut := spec(t, "/", "--log-level", "debug", "-i", "--rootfs", "/var/lib/box/root", "--", "npx", "-y", "server", "--bundle", "x")
	require.Equal(t, 0, code, errOut)
	s := decodeSpec(t, out)
	assert.Equal(t, []string{"npx", "-y", "server", "--bundle", "x"}, s.Process.Args, "everything after -- is the command's")
	assert.True(t, s.Process.Terminal, "-i gives a terminal")
	assert.Equal(t, "/var/lib/box/root", s.Root.Path)
	for _, m := range s.Mounts {
		assert.NotEqual(t, initproto.InitMountPath, m.Destination, "no boxsh-init to bind")
	}
	assert.Equal(t, "/", s.Process.Cwd)

	stubSpecHost(t, "/opt/boxsh-init")
	code, out, _ = spec(t, "/", "--", "sh")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"source": "/opt/boxsh-init"`, "boxsh-init is bound when there is one")
}

// TestSpecEnv checks that the spec's process gets the environment boxsh
// --sandbox gives commands (policy.CommandEnv of boxsh's). That is the
// base variables and what the policy passes and sets, and nothing else.
// Secret-looking names are passed only when named exactly.
func TestSpecEnv(t *testing.T) {
	stubSpecHost(t, "/opt/boxsh-init")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("PATH", "/bin")
	t.Setenv("LC_ALL", "C")
	t.Setenv("BOXSH_SPEC_PASSED", "1")
	t.Setenv("BOXSH_SPEC_TOKEN", "secret")
	t.Setenv("PATHX", "1")
	dir := t.TempDir()
	pol := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(`{"environment": {"pass": ["BOXSH_SPEC_*"], "set": {"CI": "true"}}}`), 0o644))
	code, out, errOut := spec(t, dir, "--policy", pol)
	require.Equal(t, 0, code, errOut)
	env := decodeSpec(t, out).Process.Env
	for _, kv := range []string{"PATH=/bin", "LC_ALL=C", "BOXSH_SPEC_PASSED=1", "CI=true"} {
		assert.Contains(t, env, kv)
	}
	for _, kv := range []string{"BOXSH_SPEC_TOKEN=secret", "PATHX=1"} {
		assert.NotContains(t, env, kv)
	}

	bundle := filepath.Join(t.TempDir(), "b")
	code, _, errOut = spec(t, dir, "--bundle", bundle, "--policy", pol)
	require.Equal(t, 0, code, errOut)
	fi, err := os.Stat(filepath.Join(bundle, "config.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "config.json holds the passed variables")
}

func TestSpecBundle(t *testing.T) {
	stubSpecHost(t, "/opt/boxsh-init")
	base := t.TempDir()
	src := filepath.Join(base, "src")
	require.NoError(t, os.Mkdir(src, 0o755))
	bundle := filepath.Join(base, "bundle")
	code, out, errOut := spec(t, base, "--bundle", bundle, "--bind", "cow:src:session/dst")
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, out, "the spec goes into the bundle")

	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	require.NoError(t, err)
	s := decodeSpec(t, string(b))
	assert.Equal(t, "rootfs", s.Root.Path)
	link, err := os.Readlink(filepath.Join(bundle, "rootfs", "bin"))
	require.NoError(t, err)
	assert.Equal(t, "usr/bin", link)
	assert.FileExists(t, filepath.Join(bundle, "rootfs", "etc", "passwd"))
	assert.DirExists(t, filepath.Join(base, "session", "dst"), "the cow DST")
	assert.DirExists(t, filepath.Join(base, "session", ".boxsh", "dst"), "its work directory")

	// An absolute --rootfs is prepared where it is.
	root := filepath.Join(base, "elsewhere")
	code, _, errOut = spec(t, base, "--bundle="+bundle, "--rootfs="+root)
	require.Equal(t, 0, code, errOut)
	assert.DirExists(t, filepath.Join(root, "usr"))
}

func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		init string
		args []string
		code int
		msg  string
	}{
		{"format", "/i", []string{"--format", "json"}, 2, `--format "json": expected oci or sbpl`},
		{"format value", "/i", []string{"--format"}, 2, "--format needs a value"},
		{"bundle value", "/i", []string{"--bundle="}, 2, "--bundle needs a value"},
		{"shell args", "/i", []string{"-c", "echo"}, 2, `unexpected argument "-c"`},
		{"rpc", "/i", []string{"--rpc"}, 2, "--rpc is not an option of spec"},
		{"version", "/i", []string{"--version"}, 2, "--version"},
		{"try", "/i", []string{"--try"}, 2, "--try is not an option of spec"},
		{"bad bind", "/i", []string{"--bind", "rx:/tmp"}, 1, "unknown mode"},
		{"missing source", "/i", []string{"--bind", "ro:/nonexistent/boxsh-test"}, 1, "source /nonexistent/boxsh-test"},
		{"reserved", "/i", []string{"--bind", "wr:/proc"}, 1, "cannot bind over /proc"},
		{"no command", "/i", []string{"--"}, 2, "-- must be followed by a command"},
		{"no boxsh-init", "", []string{}, 1, "cannot find boxsh-init"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stubSpecHost(t, tc.init)
			code, out, errOut := spec(t, "/", tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Empty(t, out)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			assert.True(t, strings.HasPrefix(errOut, "boxsh spec: "), errOut)
			assert.Contains(t, errOut, tc.msg)
		})
	}
}

func TestSpecHelp(t *testing.T) {
	stubSpecHost(t, "/i")
	var out, errOut bytes.Buffer
	code, ok := runSubcommand([]string{"spec", "--bind", "wr:/x", "--help"}, "/", &out, &errOut)
	assert.True(t, ok)
	assert.Equal(t, 0, code)
	assert.Contains(t, out.String(), "Usage: boxsh spec")
	assert.Empty(t, errOut.String())
}

func TestRunDispatchesSpec(t *testing.T) {
	stubSpecHost(t, "/i")
	assert.Equal(t, 2, run([]string{"spec", "--format", "yaml"}), "spec is a subcommand, not a shell argument")
}

func TestSpecFormatSBPL(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755))
	code, out, errOut := spec(t, dir, "--format", "sbpl", "--bind", "wr:"+dir, "--new-net-ns")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "(version 1)\n"), out)
	assert.Contains(t, out, "(deny default)")
	assert.Contains(t, out, `(allow file-read* file-write* (subpath "/private`+dir+`"))`, "macOS's /tmp is /private/tmp")
	assert.Contains(t, out, `; denyRead .env (from default)`, "the policy's rules are in the profile with their sources")
	assert.Contains(t, out, `; protected /private`+dir+`/.git/hooks: `, "the existing repository's control files too")
	assert.Contains(t, out, `; hard-denied .bashrc`, "and the protected names")

	code, _, errOut = spec(t, dir, "--format", "sbpl", "--bundle", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--bundle is for --format oci")
}

// TestSpecSBPLIsWhatRuns checks that boxsh spec --format sbpl prints the
// profile boxsh --sandbox runs with the same flags (issue 29, item 12).
// The sandbox is resolved the way the front resolves it (main.go's run).
// The profile is built by the same function, runtime.SeatbeltArgs, which
// the macOS front runs sandbox-exec with.
func TestSpecSBPLIsWhatRuns(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	home := filepath.Join(dir, "home")
	proj := filepath.Join(home, "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(proj, "repo", ".git", "hooks"), 0o755))
	require.NoError(t, os.Symlink(proj, filepath.Join(dir, "link")))
	t.Setenv("HOME", home)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "T"), 0o755))
	t.Setenv("TMPDIR", filepath.Join(dir, "T"))
	for _, flags := range [][]string{
		{"--sandbox"},
		{"--sandbox", "--network", "disabled"},
		{"--sandbox", "--new-net-ns"},
		{"--sandbox", "--network", "allowlist", "--allow-domain", "example.com"},
		{"--sandbox", "--bind", "wr:" + filepath.Join(dir, "link")},
		{"--sandbox", "--bind", "ro:" + home, "--bind", "cow:" + proj + ":" + filepath.Join(dir, "work"), "--network", "disabled"},
	} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			// What the front runs (main.go's run, then the macOS shell).
			opts, err := parseArgs(flags, proj)
			require.NoError(t, err)
			require.NoError(t, opts.sandbox.Validate())
			opts.policy, err = loadPolicy(opts, home, proj)
			require.NoError(t, err)
			sb, err := host.ResolveSandbox(opts.sandbox, opts.policy, home, proj)
			require.NoError(t, err)
			sc, err := runtime.StartSeatbelt(seatbeltInputs(sb, opts.policy, home, proj), nil, []string{"/bin/sh"}, nil)
			require.NoError(t, err)
			defer sc.Stop()
			require.Equal(t, "-p", sc.Args[1])
			// What is named at start, as spec shows it.
			tmp := sc.Inputs.PrivateTmp
			require.DirExists(t, tmp)
			assert.Contains(t, sc.Env, "TMPDIR="+tmp+"/")
			runs := strings.ReplaceAll(sc.Args[2], tmp, filepath.Join(dir, "T", runtime.PrivateTmpStandIn))
			if sc.Inputs.ProxyPort != 0 {
				runs = strings.ReplaceAll(runs, fmt.Sprintf(`"localhost:%d"`, sc.Inputs.ProxyPort), `"localhost:0"`)
			}

			code, printed, errOut := spec(t, proj, append([]string{"--format", "sbpl"}, flags[1:]...)...)
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, runs, printed)

			mode, _ := opts.policy.Network()
			switch {
			case mode == policy.NetworkAllowAll:
				assert.Contains(t, printed, "\n(allow network*)\n")
			default:
				assert.NotContains(t, printed, "(allow network*)", "--network %s", mode)
				assert.Contains(t, printed, "\n(deny network*)\n")
			}
			if mode == policy.NetworkAllowlist {
				assert.Contains(t, printed, `(allow network-outbound (remote ip "localhost:0"))`)
			}
		})
	}
}

func TestSpecNetworkModes(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	hasNetNS := func(args ...string) bool {
		t.Helper()
		stubSpecHost(t, "/usr/bin/boxsh-init")
		code, out, errOut := spec(t, t.TempDir(), args...)
		require.Equal(t, 0, code, errOut)
		for _, ns := range decodeSpec(t, out).Linux.Namespaces {
			if ns.Type == "network" {
				return true
			}
		}
		return false
	}
	assert.False(t, hasNetNS(), "allow_all by default")
	assert.True(t, hasNetNS("--network", "disabled"))
	assert.True(t, hasNetNS("--new-net-ns"))
	assert.True(t, hasNetNS("--network", "allowlist", "--allow-domain", "registry.npmjs.org"))
	assert.False(t, hasNetNS("--new-net-ns", "--network", "allow_all"), "the later flag wins")

	stubSpecHost(t, "/usr/bin/boxsh-init")
	code, out, errOut := spec(t, t.TempDir(), "--network", "allowlist", "--allow-domain", "registry.npmjs.org")
	require.Equal(t, 0, code, errOut)
	s := decodeSpec(t, out)
	assert.Contains(t, strings.Join(s.Process.Args, " "), "--proxy-fd 4 --proxy-listen 127.0.0.1:3128", "boxsh-init exposes the proxy of fd 4")
	assert.Contains(t, s.Process.Env, "HTTPS_PROXY=http://127.0.0.1:3128")

	code, _, errOut = spec(t, t.TempDir(), "--network", "some")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `--network "some": expected disabled, allow_all or allowlist`)
}

// TestSpecPrintsWhatRuns checks that boxsh spec prints the plan boxsh
// runs, and names in annotations what a spec file cannot carry.
func TestSpecPrintsWhatRuns(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	stubSpecHost(t, "/opt/boxsh/boxsh-init")
	dir := t.TempDir()

	code, out, errOut := spec(t, dir, "--network", "allowlist", "--allow-domain", "example.com", "--", "sh", "-c", "echo hi")
	require.Equal(t, 0, code, errOut)
	s := decodeSpec(t, out)
	assert.Equal(t, []string{initproto.InitMountPath, "--exec", "--proxy-fd", "4", "--proxy-listen", initproto.ProxyListen, "--egress-ports", "22,80,443", "--", "sh", "-c", "echo hi"}, s.Process.Args,
		"-- CMD runs under boxsh-init --exec, as in boxsh --sandbox -- CMD")
	assert.Equal(t, "exec", s.Annotations[plan.ModeAnnotation])
	assert.Equal(t, "3", s.Annotations[plan.LifelineAnnotation], "the lifeline boxsh passes is named, not passed")
	assert.Equal(t, "proxy", s.Annotations[plan.FDAnnotation+"4"])
	assert.Equal(t, "SECCOMP_FILTER_FLAG_SPEC_ALLOW", s.Annotations[plan.SeccompFlagsAnnotation])
	assert.Empty(t, s.Linux.Seccomp.Flags, "runc 1.1 refuses seccomp flags")
	assert.Equal(t, "SIGKILL", s.Annotations[plan.ParentDeathAnnotation])
	assert.Equal(t, "none", s.Annotations[plan.DeviceRulesAnnotation])
	assert.Equal(t, "copy", s.Annotations[plan.InlineAnnotation+"/etc/passwd"])

	// boxsh-init serving calls: the rules file is named with its content,
	// and passed only when --bundle writes it.
	code, out, errOut = spec(t, dir, "--bind", "wr:"+dir, "--policy", writePolicy(t, `{"limits": {"memory": "64M", "cpus": 1}}`))
	require.Equal(t, 0, code, errOut)
	s = decodeSpec(t, out)
	assert.NotContains(t, s.Process.Args, "--rules")
	assert.Contains(t, s.Process.Args, "--memory")
	assert.Contains(t, s.Annotations[plan.FileAnnotation+initproto.RulesPath], `"rule":"hard-denied`)
	assert.Equal(t, "memory=67108864,cpus=1", s.Annotations[plan.CgroupAnnotation], "the cgroup limits a rootless runtime cannot apply")
	assert.Nil(t, s.Linux.Resources)
	assert.Equal(t, "dir", s.Annotations[plan.PlaceholderAnnotation+filepath.Join(dir, ".vscode")], "a missing protected path")

	bundle := filepath.Join(t.TempDir(), "b")
	code, _, errOut = spec(t, dir, "--bundle", bundle, "--bind", "wr:"+dir)
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	require.NoError(t, err)
	s = decodeSpec(t, string(b))
	assert.Contains(t, s.Process.Args, "--rules")
	rules, err := os.ReadFile(filepath.Join(bundle, "rootfs", initproto.RulesPath))
	require.NoError(t, err, "--bundle writes the rules file into the root")
	assert.Equal(t, s.Annotations[plan.FileAnnotation+initproto.RulesPath], string(rules))
	// The bundle's placeholders cover the missing protected paths and
	// what the file rules deny, as boxsh's own do.
	placeholders := filepath.Join(bundle, "placeholders")
	vscode := filepath.Join(dir, ".vscode")
	assert.NotContains(t, s.Annotations, plan.PlaceholderAnnotation+vscode, "the spec carries the mount")
	var covered *specs.Mount
	for i, m := range s.Mounts {
		if m.Destination == vscode {
			covered = &s.Mounts[i]
		}
	}
	require.NotNil(t, covered, "the missing .vscode is covered")
	assert.Equal(t, filepath.Join(placeholders, "dir"), covered.Source)
	assert.Contains(t, covered.Options, "ro")
	for name, mode := range map[string]os.FileMode{"dir": 0o555 | os.ModeDir, "file": 0o444, "denied": 0, "denied-dir": os.ModeDir} {
		fi, err := os.Stat(filepath.Join(placeholders, name))
		require.NoError(t, err, name)
		assert.Equal(t, mode, fi.Mode(), name)
	}
}

// writePolicy writes a policy settings file and returns its path.
func writePolicy(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// TestSpecRefusesWritableConfigDir checks that boxsh spec refuses, as
// boxsh --sandbox does, a sandbox that could write boxsh's own settings.
// Those are the global policy and the trust store, which decide what later
// sandboxes may do. Run by another runtime, the sandbox's command could
// widen the next session's policy.
func TestSpecRefusesWritableConfigDir(t *testing.T) {
	stubSpecHost(t, "/opt/boxsh-init")
	proj := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(proj, "cfg"))
	bundle := filepath.Join(t.TempDir(), "b")
	for _, args := range [][]string{{"--bind", "wr:" + proj}, {"--bundle", bundle, "--bind", "wr:" + proj}} {
		code, out, errOut := spec(t, proj, args...)
		assert.NotEqual(t, 0, code, "%q", args)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "boxsh's own settings", "%q", args)
	}
	assert.NoFileExists(t, filepath.Join(bundle, "config.json"), "no bundle")

	code, _, errOut := spec(t, proj, "--bind", "ro:"+proj)
	assert.Equal(t, 0, code, "a ro bind cannot write them: %s", errOut)
}

// TestSpecRefusesBundleInWritableBind checks that the bundle (its
// config.json, root and placeholders) is not writable from the sandbox it
// describes. Otherwise a command could rewrite config.json, and the next
// run of the bundle would be the sandbox it wrote.
func TestSpecRefusesBundleInWritableBind(t *testing.T) {
	stubSpecHost(t, "/opt/boxsh-init")
	t.Setenv("HOME", t.TempDir())
	proj := t.TempDir()
	for _, args := range [][]string{
		{"--bundle", filepath.Join(proj, "b"), "--bind", "wr:" + proj},
		{"--bundle", "b", "--bind", "wr:."},
		{"--bundle", filepath.Join(t.TempDir(), "b"), "--rootfs", filepath.Join(proj, "root"), "--bind", "wr:" + proj},
		{"--bundle", filepath.Join(proj, "b"), "--bind", "cow:" + t.TempDir() + ":" + proj},
	} {
		code, _, errOut := spec(t, proj, args...)
		assert.Equal(t, 1, code, "%q", args)
		assert.Contains(t, errOut, "would let the sandbox write into its own bundle", "%q", args)
	}
	assert.NoDirExists(t, filepath.Join(proj, "b"), "nothing written")

	code, _, errOut := spec(t, proj, "--bundle", filepath.Join(proj, "b"), "--bind", "ro:"+proj)
	assert.Equal(t, 0, code, "a ro bind cannot write it: %s", errOut)
}

// TestSpecBundleNeverWritesThroughSymlinks checks that boxsh spec --bundle
// does not write through symlinks in the bundle. A bundle written again
// may hold symlinks that an earlier sandbox, able to write there, left in
// it. Written through:
//   - a rules.json link to a shell start-up file would be overwritten with
//     paths an attacker chose;
//   - a placeholders/dir link to ~/.ssh would be bound read-only over
//     every missing protected directory, and chmodded;
//   - the other placeholders and config.json would truncate or rewrite
//     their targets.
func TestSpecBundleNeverWritesThroughSymlinks(t *testing.T) {
	stubSpecHost(t, "/opt/boxsh/boxsh-init")
	t.Setenv("HOME", t.TempDir())
	proj := t.TempDir()
	victims := t.TempDir()
	victim := func(name string) string {
		p := filepath.Join(victims, name)
		require.NoError(t, os.WriteFile(p, []byte("original "+name+"\n"), 0o644))
		return p
	}
	secrets := filepath.Join(t.TempDir(), "ssh")
	require.NoError(t, os.MkdirAll(secrets, 0o700))

	bundle := filepath.Join(t.TempDir(), "b")
	require.NoError(t, os.MkdirAll(filepath.Join(bundle, "rootfs/.boxsh"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(bundle, "placeholders"), 0o755))
	links := map[string]string{
		"rootfs/.boxsh/rules.json": victim("bashrc"),
		"placeholders/dir":         secrets,
		"placeholders/file":        victim("file"),
		"placeholders/denied":      victim("denied"),
		"placeholders/commondir":   victim("commondir"),
		"config.json":              victim("config"),
	}
	for at, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(bundle, at)))
	}

	code, _, errOut := spec(t, proj, "--bundle", bundle, "--bind", "wr:"+proj)
	require.Equal(t, 0, code, errOut)
	for at, target := range links {
		fi, err := os.Lstat(filepath.Join(bundle, at))
		require.NoError(t, err, at)
		assert.Zero(t, fi.Mode()&os.ModeSymlink, "%s is replaced, not followed", at)
		if target == secrets {
			continue
		}
		b, err := os.ReadFile(target)
		require.NoError(t, err)
		assert.Equal(t, "original "+filepath.Base(target)+"\n", string(b), "%s's target is untouched", at)
	}
	fi, err := os.Stat(secrets)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the link's target directory is not chmodded")
	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	require.NoError(t, err)
	s := decodeSpec(t, string(b))
	for _, m := range s.Mounts {
		assert.NotEqual(t, secrets, m.Source, "nothing binds the link's target")
	}
	fi, err = os.Stat(filepath.Join(bundle, "config.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

// TestSpecBundleRefusesSymlinkedDirs: the bundle directory, its root and
// the directories boxsh writes in there must not be symlinks (to a host
// directory whose files boxsh would write or create).
func TestSpecBundleRefusesSymlinkedDirs(t *testing.T) {
	stubSpecHost(t, "/opt/boxsh/boxsh-init")
	t.Setenv("HOME", t.TempDir())
	proj := t.TempDir()
	for _, at := range []string{"", "rootfs", "rootfs/.boxsh", "rootfs/etc", "placeholders"} {
		t.Run(at, func(t *testing.T) {
			target := t.TempDir()
			base := filepath.Join(t.TempDir(), "b")
			bundle := base
			if at == "" {
				bundle = filepath.Join(t.TempDir(), "link")
				require.NoError(t, os.Symlink(target, bundle))
			} else {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(bundle, at)), 0o755))
				require.NoError(t, os.Symlink(target, filepath.Join(bundle, at)))
			}
			code, _, errOut := spec(t, proj, "--bundle", bundle, "--bind", "wr:"+proj)
			assert.Equal(t, 1, code)
			assert.Contains(t, errOut, "is a symlink: refusing")
			entries, err := os.ReadDir(target)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing written through the link")
		})
	}
}

// TestSpecBundleAgain: boxsh spec --bundle writes the same bundle again,
// over what it wrote before (the mode-0 placeholders included).
func TestSpecBundleAgain(t *testing.T) {
	stubSpecHost(t, "/opt/boxsh/boxsh-init")
	t.Setenv("HOME", t.TempDir())
	proj := t.TempDir()
	bundle := filepath.Join(t.TempDir(), "b")
	var configs []string
	for range 2 {
		code, _, errOut := spec(t, proj, "--bundle", bundle, "--bind", "wr:"+proj)
		require.Equal(t, 0, code, errOut)
		b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
		require.NoError(t, err)
		configs = append(configs, string(b))
		assert.FileExists(t, filepath.Join(bundle, "rootfs", initproto.RulesPath))
	}
	assert.Equal(t, configs[0], configs[1])
	fi, err := os.Stat(filepath.Join(bundle, "placeholders", "denied-dir"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir, fi.Mode())
}

// TestBundleHiddenRealPaths: a bundle reached through a symlink into a
// writable bind is in that bind.
func TestBundleHiddenRealPaths(t *testing.T) {
	stubSpecHost(t, "/opt/boxsh/boxsh-init")
	t.Setenv("HOME", t.TempDir())
	proj := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(proj, link))
	code, _, errOut := spec(t, proj, "--bundle", filepath.Join(link, "b"), "--bind", "wr:"+proj)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "would let the sandbox write into its own bundle")
	assert.NoDirExists(t, filepath.Join(proj, "b"))
}
