package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrepareCowDirs(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "src")
	require.NoError(t, os.Mkdir(src, 0o755))
	// A stale work directory (its DST is gone, with the kernel's "work"
	// in it) and a live one.
	require.NoError(t, os.MkdirAll(filepath.Join(base, ".boxsh", "gone", "work"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(base, ".boxsh", "live"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(base, "live"), 0o755))

	dst := filepath.Join(base, "new", "dst")
	binds := []policy.Bind{
		{Mode: policy.ReadOnly, Src: src, Dst: src},
		{Mode: policy.CopyOnWrite, Src: src, Dst: dst},
		{Mode: policy.CopyOnWrite, Src: src, Dst: filepath.Join(base, "d2")},
	}
	require.NoError(t, prepareCowDirs(binds))
	assert.DirExists(t, dst)
	assert.DirExists(t, filepath.Join(base, "new", ".boxsh", "dst"))
	assert.DirExists(t, filepath.Join(base, "d2"))
	assert.DirExists(t, filepath.Join(base, ".boxsh", "d2"))
	assert.NoDirExists(t, filepath.Join(base, ".boxsh", "gone"), "stale work directory removed")
	assert.DirExists(t, filepath.Join(base, ".boxsh", "live"))
	require.NoError(t, prepareCowDirs(binds), "again on the same directories")

	// .boxsh goes when nothing is left in it.
	require.NoError(t, os.Remove(filepath.Join(base, "new", "dst")))
	removeStaleWorkDirs(filepath.Join(base, "new"))
	assert.NoDirExists(t, filepath.Join(base, "new", ".boxsh"))
}

func TestPrepareRootfs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		host     plan.HostFacts
		links    map[string]string
		dirs     []string
		files    []string
		notThere []string
	}{
		{
			name: "merged /usr",
			host: testHost,
			links: map[string]string{
				"bin": "usr/bin", "lib": "usr/lib", "lib64": "usr/lib64", "sbin": "usr/sbin",
				"etc/localtime": "/usr/share/zoneinfo/Etc/UTC", "etc/mtab": "../proc/self/mounts", "etc/os-release": "../usr/lib/os-release",
			},
			dirs:     []string{"proc", "dev", "tmp", "usr", "etc", ".boxsh", "etc/alternatives", "etc/ssl"},
			files:    []string{"etc/hosts", "etc/passwd", "etc/resolv.conf"},
			notThere: []string{"sys", "lib32", "libx32", "var", "run", "home"},
		},
		{
			name:     "split /usr",
			host:     splitHost,
			links:    map[string]string{"lib64": "/lib"},
			dirs:     []string{"usr", "bin", "lib", "sbin"},
			notThere: []string{"etc/passwd"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rootfs")
			require.NoError(t, prepareRootfs(dir, rootOf(t, tc.host)))
			require.NoError(t, prepareRootfs(dir, rootOf(t, tc.host)), "again on the same directory")
			for p, target := range tc.links {
				got, err := os.Readlink(filepath.Join(dir, p))
				require.NoError(t, err, p)
				assert.Equal(t, target, got, p)
			}
			for _, p := range tc.dirs {
				fi, err := os.Lstat(filepath.Join(dir, p))
				require.NoError(t, err, p)
				assert.True(t, fi.IsDir(), p)
			}
			for _, p := range tc.files {
				fi, err := os.Lstat(filepath.Join(dir, p))
				require.NoError(t, err, p)
				assert.True(t, fi.Mode().IsRegular(), p)
				assert.Zero(t, fi.Size(), p)
			}
			for _, p := range tc.notThere {
				assert.NoFileExists(t, filepath.Join(dir, p))
				assert.NoDirExists(t, filepath.Join(dir, p))
			}
		})
	}
}

func TestGatherHostFacts(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("the system paths are Linux's")
	}
	h := gatherHostFacts()
	require.NotEmpty(t, h.System)
	assert.Equal(t, "/usr", h.System[0].Path)
	assert.True(t, h.System[0].Dir)
	for _, hp := range append(slices.Clone(h.System), h.Etc...) {
		lfi, err := os.Lstat(hp.Path)
		require.NoError(t, err)
		assert.Equal(t, lfi.Mode()&os.ModeSymlink != 0, hp.Link != "", hp.Path)
		fi, err := os.Stat(hp.Path)
		require.NoError(t, err)
		assert.Equal(t, fi.IsDir(), hp.Dir, hp.Path)
	}
}

func TestRemovePlaceholders(t *testing.T) {
	home := t.TempDir()
	ph := filepath.Join(t.TempDir(), "ph")
	require.NoError(t, preparePlaceholders(ph))
	assert.FileExists(t, filepath.Join(ph, "file"))
	assert.DirExists(t, filepath.Join(ph, "dir"))
	fi, err := os.Stat(filepath.Join(ph, "denied-dir"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeDir, fi.Mode(), "the cover of a denyRead directory: empty, mode 0")
	require.NoError(t, preparePlaceholders(ph), "again, on the same directory")

	at := func(p string) string { return filepath.Join(home, p) }
	protect := []plan.HostPath{
		{Path: at(".cargo/credentials.toml"), Missing: true, MissingFrom: at(".cargo")},
		{Path: at(".profile"), Missing: true, MissingFrom: at(".profile")},
		{Path: at(".zshrc"), Missing: true, MissingFrom: at(".zshrc")},
		{Path: at(".ssh"), Dir: true, Missing: true, MissingFrom: at(".ssh")},
		{Path: at(".bashrc")}, // existed: never removed
	}
	// What the runtime left as mount points, and what the user wrote since.
	require.NoError(t, os.MkdirAll(at(".cargo"), 0o755))
	require.NoError(t, os.MkdirAll(at(".ssh"), 0o755))
	for _, f := range []string{".cargo/credentials.toml", ".profile", ".bashrc"} {
		require.NoError(t, os.WriteFile(at(f), nil, 0o644))
	}
	require.NoError(t, os.WriteFile(at(".zshrc"), []byte("mine"), 0o644))

	removePlaceholders(protect)
	assert.NoDirExists(t, at(".cargo"), "made for the placeholder")
	assert.NoFileExists(t, at(".profile"))
	assert.NoDirExists(t, at(".ssh"))
	assert.FileExists(t, at(".zshrc"), "written by the user meanwhile")
	assert.FileExists(t, at(".bashrc"))
}

// A directory above a placeholder that a sandbox swaps for a link to
// elsewhere (another sandbox writing the same bind) does not lead the
// removal there: what the link names stays, placeholder-like or not.
func TestRemovePlaceholdersThroughALink(t *testing.T) {
	bind, elsewhere := t.TempDir(), t.TempDir()
	at := func(p string) string { return filepath.Join(bind, p) }
	protect := []plan.HostPath{
		{Path: at("sub/.vscode"), Dir: true, Missing: true, MissingFrom: at("sub/.vscode")},
		{Path: at("sub/.gitmodules"), Missing: true, MissingFrom: at("sub/.gitmodules")},
	}
	// Elsewhere: an empty directory and an empty file of the same names,
	// which a removal by path through sub would take for placeholders.
	require.NoError(t, os.Mkdir(filepath.Join(elsewhere, ".vscode"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, ".gitmodules"), nil, 0o644))
	require.NoError(t, os.Symlink(elsewhere, at("sub")))

	removePlaceholders(protect)
	assert.DirExists(t, filepath.Join(elsewhere, ".vscode"))
	assert.FileExists(t, filepath.Join(elsewhere, ".gitmodules"))

	// Through real directories, they go.
	require.NoError(t, os.Remove(at("sub")))
	require.NoError(t, os.Mkdir(at("sub"), 0o755))
	require.NoError(t, os.Mkdir(at("sub/.vscode"), 0o555))
	require.NoError(t, os.WriteFile(at("sub/.gitmodules"), nil, 0o444))
	removePlaceholders(protect)
	assert.NoDirExists(t, at("sub/.vscode"))
	assert.NoFileExists(t, at("sub/.gitmodules"))
	assert.DirExists(t, at("sub"), "not made for them")
}

// findRunc finds runc on PATH, or in the sbin directories that a user's
// PATH often lacks (Debian installs it in /usr/sbin).
func findRunc() (string, bool) {
	if p, err := exec.LookPath("runc"); err == nil {
		return p, true
	}
	for _, p := range []string{"/usr/sbin/runc", "/usr/local/sbin/runc", "/sbin/runc"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// TestRuncRootless runs a spec of BuildSpec with the real runc, rootless:
// the process is /bin/sh -c with a script that probes the sandbox.
func TestRuncRootless(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("runc runs on Linux only")
	}
	if os.Geteuid() == 0 {
		t.Skip("skipped as root: this test runs runc rootless, as an unprivileged user only (for safety: never as real root)")
	}
	runc, ok := findRunc()
	if !ok {
		t.Skip("runc is not on PATH (nor in /usr/sbin, /usr/local/sbin, /sbin): apt-get install runc")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Skip("unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)")
	}

	base := t.TempDir()
	t.Cleanup(func() {
		// Overlayfs makes its work/work directory mode 0: open everything
		// up so that the TempDir cleanup can remove it.
		_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	mk := func(parts ...string) string {
		p := filepath.Join(append([]string{base}, parts...)...)
		require.NoError(t, os.MkdirAll(p, 0o755))
		return p
	}
	write := func(p, s string) {
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	roDir, wrDir, src := mk("ro"), mk("wr"), mk("src")
	dst := filepath.Join(base, "session", "dst")
	write(filepath.Join(roDir, "ro.txt"), "read-only\n")
	write(filepath.Join(src, "base.txt"), "original\n")
	write(filepath.Join(src, "victim.txt"), "delete me\n")
	write(filepath.Join(wrDir, ".bashrc"), "# rc\n")
	secret := filepath.Join(base, "secret.txt")
	write(secret, "SECRET\n")
	write(filepath.Join(roDir, "api.key"), "KEY\n")
	locked := mk("wr", "locked")

	sb := policy.Sandbox{Enabled: true, NewNetNS: true, Binds: []policy.Bind{
		{Mode: policy.ReadOnly, Src: roDir, Dst: roDir},
		{Mode: policy.ReadWrite, Src: wrDir, Dst: wrDir},
		{Mode: policy.CopyOnWrite, Src: src, Dst: dst},
	}}
	require.NoError(t, sb.Validate())
	require.NoError(t, prepareCowDirs(sb.Binds))
	protect, err := gatherProtectedPaths(sb, filepath.Join(base, "home"), src) // .bashrc is on the list at any depth
	require.NoError(t, err)
	existing := slices.DeleteFunc(slices.Clone(protect), func(hp plan.HostPath) bool { return hp.Missing })
	require.Len(t, existing, 1, "only .bashrc exists; the missing ones need placeholders, which a printed spec leaves out")
	rules, err := resolveFileRules(sb, policy.Policy{
		DenyRead:  []policy.Rule{{Value: "*.key", Source: "test"}},
		DenyWrite: []policy.Rule{{Value: locked, Source: "test"}},
	}, wrDir, src)
	require.NoError(t, err)
	require.Len(t, rules.DenyRead, 1)
	require.Len(t, rules.DenyWrite, 1)
	placeholders := mk("placeholders")
	require.NoError(t, preparePlaceholders(placeholders))
	protect = existing

	script := fmt.Sprintf(`
echo "out:hello"
echo "uid:$(id -u)"
echo "cwd:$(pwd)"
echo "host:$(hostname)"
if { echo x > %[1]s/new.txt; } 2>/tmp/err; then echo "ro:writable"; else echo "ro:$(cat /tmp/err)"; fi
echo "ro-read:$(cat %[1]s/ro.txt)"
echo from-sandbox > %[2]s/new.txt && echo "wr:ok"
if { echo evil >> %[2]s/.bashrc; } 2>/dev/null; then echo "bashrc:writable"; else echo "bashrc:protected"; fi
echo "cow-read:$(cat base.txt)"
echo changed > base.txt && echo new > %[3]s/created.txt && rm victim.txt && echo "cow:ok"
if test -e %[4]s; then echo "secret:visible"; else echo "secret:hidden"; fi
echo "netdevs:$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
if unshare -U true 2>/dev/null; then echo "userns:allowed"; else echo "userns:denied"; fi
echo "pid1:$(cat /proc/1/comm)"
if cat %[1]s/api.key 2>/tmp/err; then echo "deny-read:readable"; else echo "deny-read:$(cat /tmp/err)"; fi
if { echo x > %[5]s/f; } 2>/tmp/err; then echo "deny-write:writable"; else echo "deny-write:$(cat /tmp/err)"; fi
`, roDir, wrDir, dst, secret, locked)

	bundle := mk("bundle")
	spec, err := plan.BuildSpec(plan.SpecConfig{
		Sandbox: sb,
		Args:    []string{"/bin/sh", "-c", script},
		Env:     []string{"HOME=/", "LANG=C"},
		Cwd:     src, // a cow SRC: the process starts in its DST
		UID:     uint32(os.Getuid()),
		GID:     uint32(os.Getgid()),
		Rootfs:  "rootfs",
		Host:    gatherHostFacts(),
		Protect: protect,
		Rules:   rules,
		// Only the denied placeholder is used: the missing protected
		// paths stay out (their host mount points are the runtime's job).
		Placeholders: placeholders,
		Version:      "test",
	})
	require.NoError(t, err)
	config, err := json.MarshalIndent(spec, "", "\t")
	require.NoError(t, err)
	write(filepath.Join(bundle, "config.json"), string(config))
	require.NoError(t, prepareRootfs(filepath.Join(bundle, "rootfs"), rootOf(t, gatherHostFacts())))

	state := mk("state")
	id := fmt.Sprintf("boxsh-test-%d", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t.Cleanup(func() {
		_ = exec.Command(runc, "--root", state, "delete", "--force", id).Run()
	})
	cmd := exec.CommandContext(ctx, runc, "--root", state, "run", "--bundle", bundle, id)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.NoError(t, err, "runc run")

	got := map[string]string{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			got[k] = strings.TrimSpace(v)
		}
	}
	assert.Equal(t, "hello", got["out"])
	assert.Equal(t, "0", got["uid"], "root inside")
	assert.Equal(t, dst, got["cwd"], "a cow SRC working directory becomes its DST")
	assert.Equal(t, "boxsh", got["host"])
	assert.Contains(t, got["ro"], "Read-only file system")
	assert.Equal(t, "read-only", got["ro-read"])
	assert.NoFileExists(t, filepath.Join(roDir, "new.txt"))
	assert.Equal(t, "ok", got["wr"])
	b, err := os.ReadFile(filepath.Join(wrDir, "new.txt"))
	require.NoError(t, err, "a write to a wr bind lands on the host")
	assert.Equal(t, "from-sandbox\n", string(b))
	assert.Equal(t, "protected", got["bashrc"], "a protected file in a wr bind stays read-only")
	b, err = os.ReadFile(filepath.Join(wrDir, ".bashrc"))
	require.NoError(t, err)
	assert.Equal(t, "# rc\n", string(b))
	assert.Equal(t, "original", got["cow-read"], "SRC shows through at DST")
	assert.Equal(t, "ok", got["cow"])
	assert.Equal(t, "hidden", got["secret"], "a host path that is not bound is not visible")
	assert.Equal(t, "lo", got["netdevs"], "--new-net-ns: loopback only")
	assert.Equal(t, "denied", got["userns"], "seccomp: no new user namespace")
	assert.Equal(t, "sh", got["pid1"], "own PID namespace")
	assert.Contains(t, got["deny-read"], "Permission denied", "a denyRead rule: the mode-0 placeholder, and no CAP_DAC_OVERRIDE")
	assert.Contains(t, got["deny-write"], "Read-only file system", "a denyWrite rule inside a wr bind")

	// The cow writes are in DST on the host, SRC is unchanged.
	b, err = os.ReadFile(filepath.Join(dst, "base.txt"))
	require.NoError(t, err)
	assert.Equal(t, "changed\n", string(b))
	b, err = os.ReadFile(filepath.Join(dst, "created.txt"))
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(b))
	fi, err := os.Lstat(filepath.Join(dst, "victim.txt"))
	require.NoError(t, err, "a deletion leaves a whiteout in DST")
	assert.Equal(t, os.ModeDevice|os.ModeCharDevice, fi.Mode()&(os.ModeDevice|os.ModeCharDevice))
	b, err = os.ReadFile(filepath.Join(src, "base.txt"))
	require.NoError(t, err)
	assert.Equal(t, "original\n", string(b))
	assert.FileExists(t, filepath.Join(src, "victim.txt"))
	assert.NoFileExists(t, filepath.Join(src, "created.txt"))
	assert.DirExists(t, filepath.Join(base, "session", ".boxsh", "dst"), "the work directory")
}

// destinations are the destinations of ms.
func destinations(ms []specs.Mount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Destination)
	}
	return out
}

// rootOf are the entries of the root directory the plan of a sandbox on
// host names.
func rootOf(t testing.TB, host plan.HostFacts) []plan.RootEntry {
	t.Helper()
	pl, err := plan.Build(plan.Config{Mode: plan.ModeExec, Target: plan.TargetBundle, Command: []string{"true"}, Rootfs: "rootfs", Host: host})
	require.NoError(t, err)
	return pl.Root
}

// testHost is a merged-/usr host (as in the plan's tests) with a few /etc entries.
var testHost = plan.HostFacts{
	System: []plan.HostPath{
		{Path: "/usr", Dir: true},
		{Path: "/bin", Dir: true, Link: "usr/bin"},
		{Path: "/lib", Dir: true, Link: "usr/lib"},
		{Path: "/lib64", Dir: true, Link: "usr/lib64"},
		{Path: "/sbin", Dir: true, Link: "usr/sbin"},
	},
	Etc: []plan.HostPath{
		{Path: "/etc/alternatives", Dir: true},
		{Path: "/etc/hosts"},
		{Path: "/etc/localtime", Link: "/usr/share/zoneinfo/Etc/UTC"},
		{Path: "/etc/mtab", Link: "../proc/self/mounts"},
		{Path: "/etc/os-release", Link: "../usr/lib/os-release"},
		{Path: "/etc/passwd"},
		{Path: "/etc/resolv.conf", Link: "../run/systemd/resolve/stub-resolv.conf"},
		{Path: "/etc/ssl", Dir: true},
	},
}

// splitHost has /bin, /lib and /sbin as real directories, as before the
// /usr merge.
var splitHost = plan.HostFacts{
	System: []plan.HostPath{
		{Path: "/usr", Dir: true},
		{Path: "/bin", Dir: true},
		{Path: "/lib", Dir: true},
		{Path: "/lib64", Dir: true, Link: "/lib"},
		{Path: "/sbin", Dir: true},
	},
}

// sharedDir is a directory like /tmp: sticky, and writable by every user.
func sharedDir(t *testing.T) string {
	d := t.TempDir()
	require.NoError(t, os.Chmod(d, 0o777|fs.ModeSticky))
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+rwx", d).Run() })
	require.True(t, policy.SharedDir(d))
	return d
}

// In a directory every user may write to, the work directories are the
// caller's own (.boxsh-UID), checked before use.
//
// So what another user left there neither breaks nor redirects a cow bind: a
// .boxsh the caller cannot write to, a link, a directory others may write to,
// a DST that is a link.
func TestPrepareCowDirsShared(t *testing.T) {
	src := t.TempDir()
	own := fmt.Sprintf(".boxsh-%d", os.Getuid())
	cow := func(dst string) []policy.Bind { return []policy.Bind{{Mode: policy.CopyOnWrite, Src: src, Dst: dst}} }

	// Another user's .boxsh (mode 0755, theirs: the caller cannot write
	// to it) is not used.
	tmp := sharedDir(t)
	require.NoError(t, os.Mkdir(filepath.Join(tmp, ".boxsh"), 0o555))
	dst := filepath.Join(tmp, "dst")
	require.NoError(t, prepareCowDirs(cow(dst)))
	_, work := plan.CowDirs(cow(dst)[0])
	assert.Equal(t, filepath.Join(tmp, own, "dst"), work)
	assert.DirExists(t, work)
	fi, err := os.Lstat(filepath.Join(tmp, own))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	require.NoError(t, prepareCowDirs(cow(dst)), "again")

	// A planted link, or a directory others may write to, is refused and
	// nothing is made where it points.
	elsewhere := t.TempDir()
	tmp = sharedDir(t)
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(tmp, own)))
	assert.ErrorContains(t, prepareCowDirs(cow(filepath.Join(tmp, "dst"))), filepath.Join(tmp, own))
	tmp2 := sharedDir(t)
	require.NoError(t, os.Mkdir(filepath.Join(tmp2, own), 0o777))
	require.NoError(t, os.Chmod(filepath.Join(tmp2, own), 0o777))
	assert.ErrorContains(t, prepareCowDirs(cow(filepath.Join(tmp2, "dst"))), "is not a private directory")
	tmp3 := sharedDir(t)
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(tmp3, "dst")))
	assert.ErrorContains(t, prepareCowDirs(cow(filepath.Join(tmp3, "dst"))), "symlink")
	entries, err := os.ReadDir(elsewhere)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing made through a planted link")
	fi, err = os.Stat(elsewhere)
	require.NoError(t, err)
	assert.NotEqual(t, os.FileMode(0o700), fi.Mode().Perm(), "the link's target is not chmodded")

	// Another user's directory (a fake owner: the caller's uid + 1).
	mine := t.TempDir()
	require.NoError(t, privateDirOf(mine, os.Getuid(), 0o022))
	assert.ErrorContains(t, privateDirOf(mine, os.Getuid()+1, 0o022), "is not a private directory of uid")

	// The stale-work-directory sweep does not go through a planted link.
	require.NoError(t, os.MkdirAll(filepath.Join(elsewhere, "victim", "work"), 0o755))
	removeStaleWorkDirs(tmp)
	assert.DirExists(t, filepath.Join(elsewhere, "victim", "work"))
}
