package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
// exactly one seccomp filter, in shell mode and in RPC mode: the one
// boxsh-init loads from the program the front compiled once (which is in
// the sandbox's read-only root), not a second one from libcontainer; and
// that the variable asking boxsh-init for it does not reach commands. What
// the filter refuses is checked by the Escape tests.
func TestSandboxSeccompOneFilter(t *testing.T) {
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
