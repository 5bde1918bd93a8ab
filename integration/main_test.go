// Package integration holds end-to-end tests that drive the built boxsh and
// boxsh-init binaries as a user would: over stdio in --rpc mode, through the
// official MCP Go SDK, and as a shell.
package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// binDir holds the boxsh and boxsh-init executables under test.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if dir := os.Getenv("BOXSH_BIN_DIR"); dir != "" {
		if err := checkBinaries(dir); err != nil {
			fmt.Fprintf(os.Stderr, "integration: BOXSH_BIN_DIR: %v\n", err)
			return 2
		}
		binDir = dir
		return m.Run()
	}
	tmp, err := os.MkdirTemp("", "boxsh-integration-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 2
	}
	defer os.RemoveAll(tmp)
	if err := buildBinaries(tmp); err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 2
	}
	binDir = tmp
	return m.Run()
}

// moduleRoot is the directory above this file's package.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Abs("..")
	}
	return filepath.Abs(filepath.Join(filepath.Dir(file), ".."))
}

// buildBinaries builds boxsh and boxsh-init into dir.
func buildBinaries(dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// As just build: the front with libseccomp (the sandbox needs it).
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "seccomp", "-o", dir+string(filepath.Separator), "./cmd/boxsh", "./cmd/boxsh-init")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return checkBinaries(dir)
}

func checkBinaries(dir string) error {
	for _, name := range []string{"boxsh", "boxsh-init"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable file", filepath.Join(dir, name))
		}
	}
	return nil
}

// boxshPath is the boxsh executable under test.
func boxshPath() string { return filepath.Join(binDir, "boxsh") }
