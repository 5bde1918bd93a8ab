//go:build linux

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bframe "github.com/boxsh/boxsh/internal/initproto"
)

// The tests of this file check that `boxsh spec` prints the sandbox that
// `boxsh --sandbox` runs (issue 13): for each mode, the same probe script
// runs in `boxsh --sandbox FLAGS -c PROBE` and, under the OCI runtime runc
// (rootless, as the unprivileged user), in the bundle that
// `boxsh spec --bundle B FLAGS -- /bin/sh -c PROBE` writes, and what the
// two print is compared section by section: mounts, writable and readable
// paths, network, environment, rlimits. TestRuncSpecInitMatchesRPC does
// the same for the spec without a command (boxsh-init under runc, driven
// over its frame socket) against boxsh --rpc --sandbox.

// runcPath is the runc the tests run bundles with ("" when missing).
func runcPath() string {
	if p, err := exec.LookPath("runc"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/runc", "/usr/bin/runc"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// requireRunc skips the test where there is no runc (a platform without
// it), or fails it in CI, and returns its path.
func requireRunc(t *testing.T) string {
	t.Helper()
	p := runcPath()
	if p == "" {
		requireInCI(t, "runc is not installed (Debian: apt-get install runc; scripts/deps.sh does)")
	}
	return p
}

// requireInCI ends the test for want of what reason names. On a developer's
// machine it skips the test. In CI (CI=true, as .ci/run sets it) it fails
// it, since scripts/deps.sh installs what is missing there and the test
// must run.
func requireInCI(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: CI must run this test", reason)
	}
	t.Skip(reason)
}

// runcFixture is the host side of a comparison: a project with files the
// policy rules and binds are about, a home, and a loopback server that
// stands for the outside world.
type runcFixture struct {
	// project is the working directory of both runs.
	project string
	// home is $HOME of both runs (with XDG_CONFIG_HOME cleared, so that
	// no settings file of the user's applies).
	home string
	// other holds the directories of binds besides the project: ro, wr,
	// cow-src and cow-dst.
	other string
	// outside is the address of a TCP server on the host's loopback: a
	// sandbox that shares the host's network reaches it, one with a
	// network namespace of its own does not.
	outside string
	// env is added to the environment of both runs.
	env []string
}

// outsideGreeting is what the outside server writes to each connection.
const outsideGreeting = "boxsh-runc-outside"

// newRuncFixture makes the fixture of one subtest.
func newRuncFixture(t *testing.T) *runcFixture {
	t.Helper()
	fx := &runcFixture{project: t.TempDir(), home: t.TempDir(), other: t.TempDir()}
	for name, content := range map[string]string{
		"README": "readme\n", ".env": "SECRET=1\n", ".env.example": "SECRET=\n",
		"keys/id": "key\n", "certs/server.pem": "PEM\n", "docs/guide.md": "guide\n",
		"build/out.txt": "old\n", "src/main.go": "package main\n",
		// A repository without hooks: its hooks directory is protected
		// while missing (a placeholder).
		".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n\tbare = false\n",
	} {
		writeHostFile(t, filepath.Join(fx.project, name), content, 0o644)
	}
	for _, d := range []string{"ro", "wr", "cow-src"} {
		writeHostFile(t, filepath.Join(fx.other, d, "file"), d+"\n", 0o644)
	}
	fx.env = policyEnv(fx.home)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(outsideGreeting + "\n"))
			c.Close()
		}
	}()
	fx.outside = ln.Addr().String()
	return fx
}

// path is a path of the fixture: "project/..." is under the project,
// "home" the home, anything else under other.
func (fx *runcFixture) path(p string) string {
	switch {
	case p == "project" || strings.HasPrefix(p, "project/"):
		return filepath.Join(fx.project, strings.TrimPrefix(p, "project"))
	case p == "home":
		return fx.home
	}
	return filepath.Join(fx.other, p)
}

// writePolicy writes a settings file outside every bind (so that it is
// taken whole, as the user's own) and returns its path.
func (fx *runcFixture) writePolicy(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// probeScript returns the sh script both runs execute. It prints sections
// "== NAME" of observations. write lists the directories to try writing a
// file in, create the directories to try making, and read the paths to try
// reading.
func probeScript(fx *runcFixture, write, create, read []string) string {
	port := fx.outside[strings.LastIndex(fx.outside, ":")+1:]
	var b strings.Builder
	b.WriteString(`exec 2>&1
echo '== identity'
id
echo "cwd: $(pwd)"
echo "hostname: $(cat /proc/sys/kernel/hostname)"
echo "umask: $(umask)"
echo '== mounts'
cat /proc/self/mountinfo
echo '== status'
grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status
echo '== etc'
for f in /etc/* /etc/.[!.]*; do
	if [ -L "$f" ]; then echo "$f -> $(readlink "$f")"
	elif [ -d "$f" ]; then echo "$f/ $(find "$f" 2>&1 | sort | cksum)"
	elif [ -e "$f" ]; then echo "$f $(cksum < "$f" 2>&1)"; fi
done
echo '== writable'
for p in` + shqList(write) + `; do
	if (: > "$p/runc-probe-file") 2>/dev/null; then echo "$p: writable"; rm -f "$p/runc-probe-file"
	else echo "$p: not writable"; fi
done
for p in` + shqList(create) + `; do
	if mkdir "$p" 2>/dev/null; then echo "$p: created"; rmdir "$p"
	else echo "$p: not created"; fi
done
echo '== readable'
for p in` + shqList(read) + `; do
	if [ -d "$p" ]; then ls "$p" >/dev/null 2>&1 && echo "$p: listable" || echo "$p: not listable"
	elif [ -e "$p" ]; then cat "$p" >/dev/null 2>&1 && echo "$p: readable" || echo "$p: not readable"
	else echo "$p: absent"; fi
done
echo '== env'
env | sort
echo '== limits'
echo "ulimit -n: $(ulimit -Sn) $(ulimit -Hn)"
cat /proc/self/limits
echo '== network'
echo "interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' ')"
perl -MIO::Socket::INET -e '
	$l = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1:0") or do { print "loopback: cannot listen\n"; exit };
	$c = IO::Socket::INET->new(PeerAddr => "127.0.0.1:" . $l->sockport, Timeout => 3);
	print "loopback: ", ($c ? "works" : "fails"), "\n";
	for (["outside", "127.0.0.1:` + port + `"], ["proxy", "127.0.0.1:3128"]) {
		$s = IO::Socket::INET->new(PeerAddr => $_->[1], Timeout => 3);
		print "$_->[0]: ", ($s ? "reachable" : "unreachable"), "\n";
	}'
echo "proxy variables: $(env | grep -ci '_proxy=')"
echo '== pid1'
[ $$ = 1 ] && echo "the probe is PID 1" || echo "the probe is not PID 1"
echo "pid 1: $(tr '\0' ' ' </proc/1/cmdline | cut -d' ' -f1)"
echo '== init'
tr '\0' ' ' </proc/1/cmdline; echo
echo '== end'
`)
	return b.String()
}

// shqList is the words, each quoted for sh, each after a space.
func shqList(words []string) string {
	var b strings.Builder
	for _, w := range words {
		b.WriteString(" " + shq(w))
	}
	return b.String()
}

// observation is what the probe printed, by section.
type observation struct {
	sections map[string]string
	raw      string
}

// runcSections are the sections of the probe, in the order printed.
var runcSections = []string{"identity", "mounts", "status", "etc", "writable", "readable", "env", "limits", "network"}

// parseObservation splits the probe's output into its sections and
// normalises them (normaliseMounts).
func parseObservation(t *testing.T, out string) observation {
	t.Helper()
	obs := observation{sections: map[string]string{}, raw: out}
	var cur string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "== "); ok {
			cur = name
			obs.sections[cur] = ""
			continue
		}
		if cur != "" {
			obs.sections[cur] += line + "\n"
		}
	}
	require.Contains(t, obs.sections, "end", "the probe did not finish:\n%s", out)
	obs.sections["mounts"] = normaliseMounts(obs.sections["mounts"])
	return obs
}

// mountFlags are the per-mount flags compared: what a process can do
// through the mount.
var mountFlags = []string{"ro", "rw", "nosuid", "nodev", "noexec"}

// normaliseMounts reduces /proc/self/mountinfo to one line per mount,
// "MOUNT-POINT FSTYPE FLAGS", sorted.
//
// It leaves out what legitimately differs between two runs of the same
// spec:
//   - the mount ids and the device numbers;
//   - the sources and the root within the source, since the sandbox's state
//     directory is a new one each run, and a bundle's root directory is
//     where its user put it;
//   - the file system's own options (a tmpfs's size, say) and atime flags;
//   - the file system of "/": it is the directory the runtime is given as
//     the root. boxsh makes a tmpfs, and a bundle's rootfs is a directory
//     on the host's file system; it is read-only in both.
//
// It also leaves out the mounts of the entries of /etc (/etc/NAME), since
// only mountinfo shows them. boxsh copies the small ones into its root
// instead of binding them (runtime/inline.go, for start-up time). The "etc"
// section compares what they hold, and "writable" checks that /etc stays
// read-only. The spec keeps the binds, and names them in
// org.boxsh.inline.PATH annotations.
func normaliseMounts(mountinfo string) string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(mountinfo), "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 6 || sep < 0 || sep+1 >= len(f) {
			lines = append(lines, "unparsed: "+line)
			continue
		}
		point, fstype := f[4], f[sep+1]
		if filepath.Dir(point) == "/etc" {
			continue
		}
		switch {
		case point == "/":
			fstype = "(root)"
		case strings.Contains(f[3], "/placeholders/"):
			// The source is a placeholder (an empty file or directory
			// bound over a path): in boxsh's state directory, or in the
			// bundle; its file system is theirs.
			fstype = "(placeholder)"
		}
		var flags []string
		for _, o := range strings.Split(f[5], ",") {
			if slices.Contains(mountFlags, o) {
				flags = append(flags, o)
			}
		}
		lines = append(lines, point+" "+fstype+" "+strings.Join(flags, ","))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// runcNoFileSoft is the soft limit of open files both runs of a comparison
// are started with. It is below the hard one, as in a login session
// (systemd gives 1024 of 524288). boxsh gives its sandbox the limit it was
// started with, and its spec must say so. Otherwise runc gives the process
// its own limit: a runc built with Go 1.19 or later raises its soft limit
// to the hard one.
const runcNoFileSoft = 1000

// runBoxshNoFile is runBoxshIn with boxsh started with the soft limit of
// open files runcNoFileSoft (or the hard one, if lower).
func runBoxshNoFile(t *testing.T, ctx context.Context, dir string, env []string, args ...string) runResult {
	t.Helper()
	script := fmt.Sprintf(`ulimit -Sn %d 2>/dev/null || ulimit -Sn "$(ulimit -Hn)"; exec "$0" "$@"`, runcNoFileSoft)
	return runProgramIn(t, ctx, dir, "", env, "/bin/sh", append([]string{"-c", script, boxshPath()}, args...)...)
}

// runcCase is one mode compared.
type runcCase struct {
	name string
	// flags are the sandbox flags of both runs (after --sandbox for
	// boxsh, after spec --bundle B for boxsh spec).
	flags func(t *testing.T, fx *runcFixture) []string
	// command runs boxsh's side as `boxsh --sandbox FLAGS -- /bin/sh -c
	// PROBE` instead of with -c.
	command bool
	// write, create and read are the paths of the fixture (see
	// runcFixture.path) the probe tries, besides the default ones.
	write, create, read []string
	// sections are compared besides runcSections.
	sections []string
	// proxy tells that the sandbox's network goes through the front's
	// proxy (--network allowlist): the one known difference under runc
	// (see knownProxyDifference).
	proxy bool
}

// paths are the fixture's paths names (see runcFixture.path) after the
// sandbox paths given.
func (runcCase) paths(fx *runcFixture, given, names []string) []string {
	out := slices.Clone(given)
	for _, n := range names {
		out = append(out, fx.path(n))
	}
	return out
}

// defaultWritable are the sandbox paths every probe tries to write.
var defaultWritable = []string{"/", "/tmp", "/etc", "/usr", "/dev/shm", "/.boxsh"}

// Paths of the fixture the cases try.
var (
	runcBindPaths = []string{"project", "project/build", "project/docs", "project/src", "ro", "wr", "cow-src", "cow-dst",
		"project/.vscode", "project/.git", "project/.git/hooks"}
	runcCreatePaths = []string{"project/.vscode", "project/.claude", "project/.mcp.json", "project/.git/hooks", "project/.git/hooks/x",
		"project/newdir", "wr/.vscode", "wr/newdir", "cow-dst/.vscode"}
	runcReadPaths = []string{"project/README", "project/.env", "project/.env.example", "project/keys", "project/keys/id",
		"project/certs/server.pem", "project/docs/guide.md", "ro/file", "wr/file", "cow-src/file", "cow-dst/file", "cow-dst/.env"}
)

// runcCases are the modes compared.
func runcCases() []runcCase {
	files := func(c runcCase) runcCase {
		c.write, c.create, c.read = runcBindPaths, runcCreatePaths, runcReadPaths
		return c
	}
	return []runcCase{
		files(runcCase{name: "plain", flags: func(*testing.T, *runcFixture) []string { return nil }}),
		files(runcCase{name: "bind-ro", flags: func(_ *testing.T, fx *runcFixture) []string {
			return []string{"--bind", "ro:" + fx.project}
		}}),
		files(runcCase{name: "bind-wr", flags: func(_ *testing.T, fx *runcFixture) []string {
			return []string{"--bind", "wr:" + fx.project}
		}}),
		files(runcCase{name: "bind-cow", flags: func(_ *testing.T, fx *runcFixture) []string {
			return []string{"--bind", "cow:" + fx.project + ":" + fx.path("cow-dst")}
		}}),
		files(runcCase{name: "bind-cow-in-place", flags: func(_ *testing.T, fx *runcFixture) []string {
			return []string{"--bind", "cow:" + fx.project + ":" + fx.path("cow-dst"), "--in-place"}
		}}),
		files(runcCase{name: "binds-all-kinds", flags: func(_ *testing.T, fx *runcFixture) []string {
			return []string{"--bind", "ro:" + fx.path("ro"), "--bind", "wr:" + fx.path("wr"),
				"--bind", "cow:" + fx.path("cow-src") + ":" + fx.path("cow-dst"), "--bind", "ro:" + fx.project}
		}}),
		{name: "network-allow_all", flags: func(*testing.T, *runcFixture) []string {
			return []string{"--network", "allow_all"}
		}},
		{name: "network-disabled", flags: func(*testing.T, *runcFixture) []string {
			return []string{"--network", "disabled"}
		}},
		{name: "new-net-ns", flags: func(*testing.T, *runcFixture) []string {
			return []string{"--new-net-ns"}
		}},
		{name: "network-allowlist", proxy: true, flags: func(*testing.T, *runcFixture) []string {
			return []string{"--network", "allowlist", "--allow-domain", "example.com"}
		}},
		files(runcCase{name: "policy-file-rules", flags: func(t *testing.T, fx *runcFixture) []string {
			return []string{"--bind", "wr:" + fx.project, "--policy", fx.writePolicy(t, `{"filesystem": {
				"denyRead": ["*.pem", "src/main.go"], "allowRead": [".env.example"],
				"denyWrite": ["docs"], "protect": ["src"]}}`)}
		}}),
		// A directory denyRead covers: in a bundle, an empty directory of
		// mode 0 bound over it, as in boxsh's sandbox. (Not a tmpfs of
		// mode 0, which runc before 1.1.8, Debian 12's, gives the mode of
		// the directory it covers: opencontainers/runc#3911.)
		files(runcCase{name: "policy-deny-read-dir", flags: func(t *testing.T, fx *runcFixture) []string {
			return []string{"--bind", "ro:" + fx.project, "--policy", fx.writePolicy(t, `{"filesystem": {"denyRead": ["keys"]}}`)}
		}}),
		files(runcCase{name: "policy-allow-write", flags: func(t *testing.T, fx *runcFixture) []string {
			return []string{"--bind", "ro:" + fx.project, "--policy", fx.writePolicy(t, `{"filesystem": {"allowWrite": ["build"]}}`)}
		}}),
		{name: "policy-environment", flags: func(t *testing.T, fx *runcFixture) []string {
			return []string{"--policy", fx.writePolicy(t, `{"environment": {"pass": ["BOXSH_RUNC_*"], "set": {"CI": "true"}}}`)}
		}},
		{name: "policy-limits", flags: func(t *testing.T, fx *runcFixture) []string {
			return []string{"--policy", fx.writePolicy(t, `{"limits": {"memory": "1G", "pids": 512}}`)}
		}},
		files(runcCase{name: "command", command: true, flags: func(_ *testing.T, fx *runcFixture) []string {
			return []string{"--bind", "ro:" + fx.project, "--bind", "wr:" + fx.path("wr")}
		}}),
		// What runs as PID 1: the probe's parent, which reaps orphans and
		// relays signals, and whether the probe is PID 1 (which the kernel
		// shields from signals it has no handler for).
		{name: "pid1", command: true, sections: []string{"pid1"}, flags: func(*testing.T, *runcFixture) []string { return nil }},
	}
}

// runcSeq makes container ids unique within the test process.
var runcSeq atomic.Int32

// runSpecUnderRunc writes the bundle of `boxsh spec FLAGS -- ARGV` (run
// in dir with env added) and runs it with runc, rootless, and returns
// what the process printed and the bundle.
func runSpecUnderRunc(t *testing.T, runc, dir string, env, flags, argv []string) (out, bundle string) {
	t.Helper()
	bundle = filepath.Join(t.TempDir(), "bundle")
	return runSpecUnderRuncIn(t, runc, dir, bundle, env, flags, argv), bundle
}

// runSpecUnderRuncIn is runSpecUnderRunc with the bundle directory
// given (written again if it exists).
func runSpecUnderRuncIn(t *testing.T, runc, dir, bundle string, env, flags, argv []string) string {
	t.Helper()
	ctx := testContext(t)
	args := append(append([]string{"spec", "--bundle", bundle}, flags...), "--")
	r := runBoxshNoFile(t, ctx, dir, env, append(args, argv...)...)
	require.Equal(t, 0, r.code(), "boxsh spec: %s", r.stderr)

	// Debian's runc 1.1 sometimes fails to copy itself before the container
	// starts (nsexec: "could not ensure we are a cloned binary: Device or
	// resource busy"). That is a fault of runc's own start, not of the
	// bundle, so such a run is tried again, twice at most.
	var stdout, stderr lockedBuffer
	for attempt := 1; ; attempt++ {
		stdout, stderr = lockedBuffer{}, lockedBuffer{}
		state := t.TempDir()
		id := fmt.Sprintf("boxsh-runc-%d-%d", os.Getpid(), runcSeq.Add(1))
		cmd := exec.CommandContext(ctx, runc, "--root", state, "run", "--bundle", bundle, id)
		cmd.Dir = dir
		cmd.Stdin = nil
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 5 * time.Second
		t.Cleanup(func() {
			_ = exec.Command(runc, "--root", state, "delete", "--force", id).Run()
		})
		err := cmd.Run()
		if err != nil && attempt < 3 && strings.Contains(stderr.String(), "could not ensure we are a cloned binary") {
			t.Logf("runc run, attempt %d: runc failed to copy itself, trying again: %s", attempt, stderr.String())
			continue
		}
		if err != nil {
			config, _ := os.ReadFile(filepath.Join(bundle, "config.json"))
			t.Fatalf("runc run: %v\nstderr: %s\nstdout: %s\nconfig.json:\n%s", err, stderr.String(), truncate(stdout.String()), truncate(config))
		}
		break
	}
	return stdout.String()
}

// bundleAnnotations are the annotations of the bundle's config.json.
func bundleAnnotations(t *testing.T, bundle string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	require.NoError(t, err)
	var spec struct {
		Annotations map[string]string `json:"annotations"`
	}
	require.NoError(t, json.Unmarshal(b, &spec))
	return spec.Annotations
}

// proxyLine is the network section's line about the proxy port.
const proxyLine = "proxy: reachable\n"

// knownProxyDifference checks the one difference --network allowlist has
// under runc. It takes the difference out of the runc observation, so that
// the rest is compared.
//
// boxsh's front serves the network proxy over fd 4, and boxsh-init exposes
// it on the proxy port. runc gives no fd 4, so nothing listens there; the
// spec names that fd (org.boxsh.fd.4 = proxy). What must still hold is
// compared after this: the same environment (the proxy variables), the same
// network namespace, and the network closed. Nothing outside is reachable:
// it fails closed, it does not open up.
func knownProxyDifference(t *testing.T, annotations map[string]string, boxsh, runc observation) {
	t.Helper()
	assert.Equal(t, "proxy", annotations["org.boxsh.fd.4"], "the spec names the proxy's descriptor")
	require.Contains(t, boxsh.sections["network"], proxyLine, "boxsh's sandbox reaches its proxy")
	require.Contains(t, boxsh.sections["network"], "outside: unreachable\n")
	require.Contains(t, runc.sections["network"], "proxy: unreachable\n", "under runc no front serves the proxy")
	require.Contains(t, runc.sections["network"], "outside: unreachable\n", "under runc the network stays closed")
	runc.sections["network"] = strings.Replace(runc.sections["network"], "proxy: unreachable\n", proxyLine, 1)
}

// compareObservations requires the two runs to have observed the same,
// section by section, with a diff of each section that differs.
func compareObservations(t *testing.T, boxsh, runc observation, extra ...string) {
	t.Helper()
	for _, name := range append(slices.Clone(runcSections), extra...) {
		assert.Equal(t, boxsh.sections[name], runc.sections[name],
			"section %q differs between boxsh --sandbox (expected) and boxsh spec under runc (actual)", name)
	}
}

// TestRuncSpecMatchesSandbox runs each mode's probe in boxsh --sandbox and
// in boxsh spec's bundle under runc, and compares what they saw.
//
// The one difference left, checked and named by knownProxyDifference:
// --network allowlist's proxy, which boxsh's front serves over fd 4 and
// runc does not give (network-allowlist). What legitimately differs per
// runtime is normalised, with the reason (normaliseMounts). Both are
// started with a soft limit of open files below the hard one
// (runBoxshNoFile), and every limit is compared.
func TestRuncSpecMatchesSandbox(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	runc := requireRunc(t)
	for _, tc := range runcCases() {
		t.Run(tc.name, func(t *testing.T) {
			fx := newRuncFixture(t)
			flags := tc.flags(t, fx)
			read := tc.paths(fx, nil, tc.read)
			script := probeScript(fx, tc.paths(fx, defaultWritable, append([]string{"home", "project"}, tc.write...)),
				tc.paths(fx, nil, tc.create), read)
			env := append(slices.Clone(fx.env), "BOXSH_RUNC_PASSED=passed", "BOXSH_RUNC_TOKEN=secret")
			argv := []string{"/bin/sh", "-c", script}

			ctx := testContext(t)
			args := append([]string{"--sandbox"}, flags...)
			if tc.command {
				args = append(append(args, "--"), argv...)
			} else {
				args = append(args, "-c", script)
			}
			r := runBoxshNoFile(t, ctx, fx.project, env, args...)
			require.Equal(t, 0, r.code(), "boxsh --sandbox: %s\n%s", r.stderr, r.stdout)
			inBoxsh := parseObservation(t, r.stdout)
			out, bundle := runSpecUnderRunc(t, runc, fx.project, env, flags, argv)
			inRunc := parseObservation(t, out)
			if tc.proxy {
				knownProxyDifference(t, bundleAnnotations(t, bundle), inBoxsh, inRunc)
			}
			compareObservations(t, inBoxsh, inRunc, tc.sections...)
			if t.Failed() {
				t.Logf("flags: %q", flags)
			}
		})
	}
}

// runcInit is boxsh-init running under runc in the bundle of boxsh spec
// (no command), driven over its frame socket as boxsh's front drives it.
type runcInit struct {
	t      *testing.T
	bundle string
	client *bframe.Client
	conn   *os.File
	cmd    *exec.Cmd
	stderr *lockedBuffer
}

// startInitUnderRunc writes the bundle of `boxsh spec --bundle B FLAGS`,
// run in dir with env added. It runs the bundle with runc, rootless, with
// one end of a socket pair as fd 3 (runc --preserve-fds 1), where
// boxsh-init expects its frames. It returns once boxsh-init has answered a
// first call. A start that failed in runc's own copy of itself (see
// runSpecUnderRuncIn) is tried again, twice at most.
func startInitUnderRunc(t *testing.T, ctx context.Context, runc, dir string, env, flags []string) *runcInit {
	t.Helper()
	bundle := filepath.Join(t.TempDir(), "bundle")
	r := runBoxshIn(t, ctx, dir, "", env, append([]string{"spec", "--bundle", bundle}, flags...)...)
	require.Equal(t, 0, r.code(), "boxsh spec: %s", r.stderr)
	for attempt := 1; ; attempt++ {
		ri := runInitUnderRunc(t, ctx, runc, dir, bundle)
		err := ri.probe()
		if err != nil && attempt < 3 && strings.Contains(ri.stderr.String(), "could not ensure we are a cloned binary") {
			t.Logf("runc run, attempt %d: runc failed to copy itself, trying again: %s", attempt, ri.stderr.String())
			continue
		}
		require.NoError(t, err, "first call under runc; runc's output:\n%s", ri.stderr.String())
		return ri
	}
}

// runInitUnderRunc starts runc on bundle, with boxsh-init's frame socket.
func runInitUnderRunc(t *testing.T, ctx context.Context, runc, dir, bundle string) *runcInit {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	// Non-blocking, so that os.File polls it and Close ends the client's
	// blocked read (and with it boxsh-init's channel).
	require.NoError(t, syscall.SetNonblock(fds[0], true))
	ours, theirs := os.NewFile(uintptr(fds[0]), "frames"), os.NewFile(uintptr(fds[1]), "frames-init")
	state := t.TempDir()
	id := fmt.Sprintf("boxsh-runc-%d-%d", os.Getpid(), runcSeq.Add(1))
	cmd := exec.CommandContext(ctx, runc, "--root", state, "run", "--preserve-fds", "1", "--bundle", bundle, id)
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{theirs}
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	theirs.Close()
	ri := &runcInit{t: t, bundle: bundle, client: bframe.NewClient(ours, bframe.ClientConfig{Hello: bframe.NewHello(boxshBuild(t))}), conn: ours, cmd: cmd, stderr: stderr}
	t.Cleanup(func() {
		ri.stop()
		_ = exec.Command(runc, "--root", state, "delete", "--force", id).Run()
	})
	return ri
}

// probe runs an empty command in boxsh-init: an error means that the
// channel ended (boxsh-init did not start, or is gone).
func (ri *runcInit) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), replyTimeout)
	defer cancel()
	got := make(chan error, 1)
	if err := ri.client.Start(ctx, "bash", json.RawMessage(`{"command": ":"}`), func(_ json.RawMessage, err error) { got <- err }); err != nil {
		return err
	}
	return <-got
}

// call runs a tool in boxsh-init and returns its result.
func (ri *runcInit) call(name string, args any) toolResult {
	ri.t.Helper()
	b, err := json.Marshal(args)
	require.NoError(ri.t, err)
	type outcome struct {
		result json.RawMessage
		err    error
	}
	got := make(chan outcome, 1)
	ctx, cancel := context.WithTimeout(context.Background(), replyTimeout)
	defer cancel()
	require.NoError(ri.t, ri.client.Start(ctx, name, b, func(r json.RawMessage, err error) { got <- outcome{r, err} }))
	o := <-got
	require.NoError(ri.t, o.err, "%s under runc; runc's output:\n%s", name, ri.stderr.String())
	var res toolResult
	require.NoError(ri.t, json.Unmarshal(o.result, &res), "%s", o.result)
	return res
}

// bash runs a command in boxsh-init and returns its stdout.
func (ri *runcInit) bash(command string) string {
	ri.t.Helper()
	res := ri.call("bash", map[string]any{"command": command})
	var out bashOutput
	require.NoError(ri.t, json.Unmarshal(res.StructuredContent, &out), "bash result: %s", res.StructuredContent)
	require.Equal(ri.t, 0, out.ExitCode, "bash under runc: %s", out.Stderr)
	return out.Stdout
}

// stop closes the frame socket (boxsh-init then ends) and waits for runc.
func (ri *runcInit) stop() {
	ri.conn.Close()
	done := make(chan struct{})
	go func() { _ = ri.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(exitTimeout):
		ri.t.Errorf("runc did not end within %v of the end of boxsh-init's frames", exitTimeout)
		_ = ri.cmd.Process.Kill()
		<-done
	}
}

// toolTexts are the texts of the file tools' results for the paths: what
// read and stat answer (the denyRead rule named, say).
func toolTexts(paths []string, call func(name string, args any) toolResult) string {
	var b strings.Builder
	for _, p := range paths {
		for _, name := range []string{"read", "stat"} {
			res := call(name, map[string]any{"path": p})
			text := res.text()
			switch {
			case name == "read" && !res.IsError:
				text = fmt.Sprintf("%d bytes", len(text))
			case name == "stat" && !res.IsError:
				// Without the modification time (a placeholder is made
				// anew for each sandbox) nor the size of a directory
				// (its file system's: a placeholder's is in boxsh's state
				// directory or in the bundle).
				var st map[string]any
				if json.Unmarshal([]byte(text), &st) == nil {
					delete(st, "mtime")
					if st["type"] == "dir" {
						delete(st, "size")
					}
					b, _ := json.Marshal(st)
					text = string(b)
				}
			}
			fmt.Fprintf(&b, "%s %s: error=%v %s\n", name, p, res.IsError, strings.ReplaceAll(text, "\n", " "))
		}
	}
	return b.String()
}

// TestRuncSpecInitMatchesRPC runs each mode's probe two ways, and compares
// what they saw:
//   - as a bash call of `boxsh --rpc --sandbox FLAGS`;
//   - as a bash call of boxsh-init run by runc from the bundle of `boxsh
//     spec --bundle B FLAGS`, with no command, so that the spec runs
//     boxsh-init.
//
// It compares as TestRuncSpecMatchesSandbox does, plus PID 1's command line
// (boxsh-init's options) and what the file tools answer for the fixture's
// files.
//
// The one difference left is that of TestRuncSpecMatchesSandbox: the proxy
// (knownProxyDifference).
func TestRuncSpecInitMatchesRPC(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	runc := requireRunc(t)
	for _, tc := range runcCases() {
		if tc.command {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			fx := newRuncFixture(t)
			flags := tc.flags(t, fx)
			read := tc.paths(fx, nil, tc.read)
			script := probeScript(fx, tc.paths(fx, defaultWritable, append([]string{"home", "project"}, tc.write...)),
				tc.paths(fx, nil, tc.create), read)
			env := append(slices.Clone(fx.env), "BOXSH_RUNC_PASSED=passed", "BOXSH_RUNC_TOKEN=secret")

			ctx := testContext(t)
			s := startServer(t, ctx, serverOptions{dir: fx.project, env: env, args: append([]string{"--sandbox"}, flags...)})
			out := s.bash(script)
			require.Equal(t, 0, out.ExitCode, "boxsh --rpc --sandbox: %s", out.Stderr)
			inBoxsh := parseObservation(t, out.Stdout)
			inBoxsh.sections["tools"] = toolTexts(read, func(name string, args any) toolResult {
				return s.call(name, args).toolResult(t)
			})
			s.stop()

			ri := startInitUnderRunc(t, ctx, runc, fx.project, env, flags)
			inRunc := parseObservation(t, ri.bash(script))
			if tc.proxy {
				knownProxyDifference(t, bundleAnnotations(t, ri.bundle), inBoxsh, inRunc)
			}
			inRunc.sections["tools"] = toolTexts(read, ri.call)
			compareObservations(t, inBoxsh, inRunc, "pid1", "init", "tools")
			if t.Failed() {
				t.Logf("flags: %q", flags)
			}
		})
	}
}

// TestRuncSpecProtectsMissingPaths checks the bundle of boxsh spec run by
// runc, as boxsh's own sandbox is checked. A command cannot create the
// protected paths that do not exist in a writable bind: code the host runs
// later, such as an editor's tasks, an agent's settings or a git hook. Nor
// can it change a repository's config. The bundle's placeholders cover
// them. The empty mount points stay on the host after the run.
func TestRuncSpecProtectsMissingPaths(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	runc := requireRunc(t)
	fx := newRuncFixture(t)
	gitConfig := filepath.Join(fx.project, ".git", "config")
	before, err := os.ReadFile(gitConfig)
	require.NoError(t, err)
	attack := `cd "$1" || exit 1
mkdir -p .vscode 2>/dev/null; echo '{"tasks": []}' > .vscode/tasks.json
echo '{"mcpServers": {"x": {"command": "pwned"}}}' > .mcp.json
mkdir -p .claude 2>/dev/null; echo '{}' > .claude/settings.json
mkdir -p .git/hooks 2>/dev/null; printf '#!/bin/sh\necho pwned\n' > .git/hooks/pre-commit
printf '[core]\n\thooksPath = /tmp\n' >> .git/config
echo 'allowed' > newfile
echo done`
	out, _ := runSpecUnderRunc(t, runc, fx.project, fx.env, []string{"--bind", "wr:" + fx.project},
		[]string{"/bin/sh", "-c", attack, "sh", fx.project})
	assert.Contains(t, out, "done\n", "the attack ran to its end")
	assert.FileExists(t, filepath.Join(fx.project, "newfile"), "the bind is writable")
	for _, p := range []string{".vscode/tasks.json", ".mcp.json/x", ".claude/settings.json", ".git/hooks/pre-commit"} {
		assert.NoFileExists(t, filepath.Join(fx.project, p), "the sandbox under runc wrote %s:\n%s", p, out)
	}
	if b, err := os.ReadFile(filepath.Join(fx.project, ".mcp.json")); err == nil {
		assert.NotContains(t, string(b), "pwned", ".mcp.json is the placeholder's mount point, not the sandbox's file")
	}
	after, err := os.ReadFile(gitConfig)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the repository's config is unchanged")
}

// TestRuncSpecBundleAgain checks that boxsh spec --bundle writes a bundle
// again after runc has run it, over the mount points runc made and the
// mode-0 placeholders. runc runs it again, and the missing protected paths
// are still covered.
func TestRuncSpecBundleAgain(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	runc := requireRunc(t)
	fx := newRuncFixture(t)
	bundle := filepath.Join(t.TempDir(), "bundle")
	script := `mkdir -p "$1/.vscode" 2>/dev/null; echo '{}' > "$1/.vscode/tasks.json" 2>/dev/null
echo "run $2"`
	for _, run := range []string{"1", "2"} {
		out := runSpecUnderRuncIn(t, runc, fx.project, bundle, fx.env, []string{"--bind", "wr:" + fx.project},
			[]string{"/bin/sh", "-c", script, "sh", fx.project, run})
		assert.Equal(t, "run "+run+"\n", out)
		assert.NoFileExists(t, filepath.Join(fx.project, ".vscode", "tasks.json"), "run %s", run)
	}
}

// boxshBuild is the build of the boxsh under test, as its --version says:
// the hello a boxsh-init of the same build expects.
func boxshBuild(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(boxshPath(), "--version").CombinedOutput()
	require.NoError(t, err)
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "boxsh version ")
}
