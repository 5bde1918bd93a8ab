package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seccompScript prints the seccomp state of the sandboxed shell, whether
// the program the front compiled is in the sandbox's root, and whether the
// variable that asks boxsh-init to load it reached the command.
const seccompScript = `grep -E '^Seccomp(_filters)?:' /proc/self/status
test -s /.boxsh/seccomp.bpf && echo program-present
env | grep -q BOXSH_SECCOMP_PROGRAM && echo variable-leaked
echo > /.boxsh/seccomp.bpf 2>/dev/null && echo program-writable
true`

// TestSandboxSeccompOneFilter checks that a sandboxed command runs under
// exactly one seccomp filter, in shell mode and in RPC mode. It is the one
// boxsh-init loads from the program the front compiled once, which is in
// the sandbox's read-only root. There is no second one from libcontainer.
// The variable asking boxsh-init for the filter does not reach commands.
// What the filter refuses is checked by the Escape tests.
func TestSandboxSeccompOneFilter(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	check := func(mode, out string) {
		assert.Contains(t, out, "Seccomp:\t2\n", mode)
		assert.Contains(t, out, "Seccomp_filters:\t1\n", mode)
		assert.Contains(t, out, "program-present", mode)
		assert.NotContains(t, out, "variable-leaked", mode)
		assert.NotContains(t, out, "program-writable", mode)
	}
	r := sandboxShell(t, t.TempDir(), nil, seccompScript)
	require.Equal(t, 0, r.code(), r.stderr)
	check("shell mode", r.stdout)

	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox"}})
	check("RPC mode", s.bash(seccompScript).Stdout)
}

// TestInitRefusesUnloadableSeccomp checks that boxsh-init, asked to load a
// seccomp program it cannot read or that is no BPF program, exits with an
// error before it runs anything, rather than run its command unfiltered.
func TestInitRefusesUnloadableSeccomp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	short := filepath.Join(dir, "short.bpf")
	require.NoError(t, os.WriteFile(short, []byte("12345"), 0o644))
	for _, prog := range []string{filepath.Join(dir, "missing.bpf"), short} {
		marker := filepath.Join(dir, "ran")
		cmd := exec.Command(filepath.Join(binDir, "boxsh-init"), "--exec", "--", "touch", marker)
		cmd.Env = append(os.Environ(), "BOXSH_SECCOMP_PROGRAM="+prog)
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr, "boxsh-init with %s: %s", prog, out)
		assert.Equal(t, 1, exitErr.ExitCode(), "%s", out)
		assert.True(t, strings.Contains(string(out), "seccomp"), "the error names seccomp: %s", out)
		assert.NoFileExists(t, marker, "the command ran without its filter")
	}
}

// unshareProbe prints unshare-allowed when the command may make a user
// namespace, which the sandbox's filter refuses.
const unshareProbe = `unshare -U true 2>/dev/null && echo unshare-allowed; echo done`

// TestSeccompNotPoisonedByAnotherSandbox checks that a sandbox with a
// writable bind on another state directory cannot leave an "allow
// everything" program there for a later sandbox to load. boxsh picks
// $XDG_RUNTIME_DIR/boxsh, which may differ from one start to the next. The
// front keeps no compiled program on disk.
func TestSeccompNotPoisonedByAnotherSandbox(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	victimXDG, attackerXDG := t.TempDir(), t.TempDir()
	victimRoot := filepath.Join(victimXDG, "boxsh")
	run := func(xdg string, flags []string, script string) runResult {
		args := append(append([]string{"--sandbox"}, flags...), "-c", script)
		return runBoxshIn(t, testContext(t), t.TempDir(), "", []string{"XDG_RUNTIME_DIR=" + xdg}, args...)
	}
	r := run(victimXDG, nil, unshareProbe)
	require.Contains(t, r.stdout, "done", r.stderr)
	require.NotContains(t, r.stdout, "unshare-allowed")
	// The victim's launcher removes its state directory after the front has
	// exited: the attacker's start walks the bind, which must not change
	// under it meanwhile.
	require.Eventually(t, func() bool { return len(sandboxStates(t, victimXDG)) == 0 },
		10*time.Second, 10*time.Millisecond, "state directories %v left", sandboxStates(t, victimXDG))
	// One BPF instruction: return SECCOMP_RET_ALLOW.
	allow := `printf '\006\000\000\000\000\000\377\177'`
	r = run(attackerXDG, []string{"--bind", "wr:" + victimRoot},
		`for f in `+victimRoot+`/* `+victimRoot+`/seccomp-x.bpf; do `+allow+` > "$f" 2>/dev/null; done; echo written`)
	require.Contains(t, r.stdout, "written", r.stderr)
	r = run(victimXDG, nil, unshareProbe)
	require.Contains(t, r.stdout, "done", r.stderr)
	assert.NotContains(t, r.stdout, "unshare-allowed", "a later sandbox runs under the filter")
}

// TestSeccompProgramNotNamedByPolicy checks that a policy setting the
// variable that names boxsh-init's program (a project file may set new
// variables) cannot make boxsh-init load another program.
func TestSeccompProgramNotNamedByPolicy(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	dir := t.TempDir()
	allow := filepath.Join(dir, "allow.bpf")
	require.NoError(t, os.WriteFile(allow, []byte("\x06\x00\x00\x00\x00\x00\xff\x7f"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".boxsh"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".boxsh", "policy.json"),
		[]byte(`{"environment": {"set": {"BOXSH_SECCOMP_PROGRAM": "`+allow+`"}}}`), 0o644))
	env := policyEnv(t.TempDir())
	r := runBoxshIn(t, testContext(t), dir, "", env, "--sandbox", "--bind", "ro:"+dir, "-c", seccompScript+"\n"+unshareProbe)
	require.Contains(t, r.stdout, "done", r.stderr)
	assert.NotContains(t, r.stdout, "unshare-allowed")
	assert.Contains(t, r.stdout, "Seccomp_filters:\t1\n")

	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox", "--bind", "ro:" + dir}, dir: dir, env: env})
	out := s.bash(unshareProbe).Stdout
	assert.Contains(t, out, "done")
	assert.NotContains(t, out, "unshare-allowed")
}
