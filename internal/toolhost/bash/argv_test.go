package bash

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

func TestArgs(t *testing.T) { inBothModes(t, testArgs) }

// testArgs runs argvs whose arguments a shell would interpret, and checks
// that the program gets them as they are.
func testArgs(t *testing.T, mode string) {
	p := newPool(t, Options{Workers: 1, ForkServer: mode, Env: []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}})
	tricky := []string{"$HOME", "*", "a b", "it's", `"q"`, "`id`", "$(id)", "x;y", "|", ">out", "", "\\", "\n", "-n"}
	out := run(t, p, tool.BashArgs{Args: append([]string{"printf", "[%s]"}, tricky...)})
	assert.Equal(t, 0, out.ExitCode, out.Stderr)
	want := ""
	for _, a := range tricky {
		want += "[" + a + "]"
	}
	assert.Equal(t, want, out.Stdout)

	out = run(t, p, tool.BashArgs{Args: []string{"sh", "-c", "echo $0 $1; exit 7", "zero", "one"}})
	assert.Equal(t, "zero one\n", out.Stdout)
	assert.Equal(t, 7, out.ExitCode)

	dir := t.TempDir()
	out = run(t, p, tool.BashArgs{Args: []string{"sh", "-c", `pwd; echo "$V"; cat`}, Cwd: dir, Env: map[string]string{"V": "env"}, Stdin: "in\n"})
	assert.Equal(t, dir+"\nenv\nin\n", out.Stdout, "cwd, env and stdin apply")

	out = run(t, p, tool.BashArgs{Args: []string{"no-such-program-boxsh"}})
	assert.Equal(t, 127, out.ExitCode)
	assert.Contains(t, out.Stderr, "no-such-program-boxsh")
	out = run(t, p, tool.BashArgs{Args: []string{dir}})
	assert.Equal(t, 126, out.ExitCode, "a directory is not executable")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	out, err := p.Run(ctx, nil, tool.BashArgs{Args: []string{"sleep", "30"}, Timeout: 0.3})
	require.NoError(t, err)
	assert.Equal(t, -1, out.ExitCode, "the timeout applies")
	assert.Less(t, time.Since(start), 10*time.Second)
}

func TestArgvRefused(t *testing.T) {
	p := newPool(t, Options{Workers: 1, ForkServer: execMode})
	for _, argv := range [][]string{{}, {""}, {"-x"}, {"echo", "a\x00b"}} {
		_, err := p.Run(context.Background(), nil, tool.BashArgs{Args: argv})
		assert.Error(t, err, "%q", argv)
	}
	// The pool still serves.
	assert.Equal(t, "ok\n", run(t, p, tool.BashArgs{Args: []string{"echo", "ok"}}).Stdout)
}
