package client

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// binDir holds the boxsh and boxsh-init the tests run: $BOXSH_BIN_DIR, or
// built from this module into a temporary directory.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if dir := os.Getenv("BOXSH_BIN_DIR"); dir != "" {
		binDir = dir
		return runWithPath(m)
	}
	tmp, err := os.MkdirTemp("", "boxsh-client-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "seccomp", "-o", tmp+string(filepath.Separator), "../cmd/boxsh", "../cmd/boxsh-init", "../cmd/boxsh-launch")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build boxsh: %v\n%s", err, out)
		return 2
	}
	binDir = tmp
	return runWithPath(m)
}

// runWithPath runs the tests with binDir first on PATH, where Start finds
// boxsh for the examples.
func runWithPath(m *testing.M) int {
	os.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return m.Run()
}

// boxshBin is the boxsh the tests run.
func boxshBin() string { return filepath.Join(binDir, "boxsh") }

// testCtx ends with the test or after a minute.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// startPlain starts an unsandboxed server in a fresh directory.
func startPlain(t *testing.T, opts Options) (*Client, string) {
	t.Helper()
	dir := t.TempDir()
	opts.Binary = boxshBin()
	if opts.Dir == "" {
		opts.Dir = dir
	}
	c, err := Start(testCtx(t), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, opts.Dir
}
