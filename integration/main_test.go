// Package integration holds end-to-end tests of the built boxsh and
// boxsh-init binaries.
//
// The tests drive the binaries as a user would: over stdio in --rpc mode,
// through the official MCP Go SDK, and as a shell.
package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/boxsh/boxsh/integration/internal/seambuild"
)

// binDir holds the boxsh and boxsh-init executables under test.
var binDir string

// subprocessVar names the mode in which the test binary runs as a helper
// process of a test (one of subprocessModes) instead of running tests.
const subprocessVar = "BOXSH_TEST_SUBPROCESS"

// subprocessModes are the helper processes' functions by mode, each
// returning the exit status; files register theirs in init.
var subprocessModes = map[string]func() int{}

func TestMain(m *testing.M) {
	if mode := os.Getenv(subprocessVar); mode != "" {
		run, ok := subprocessModes[mode]
		if !ok {
			fmt.Fprintf(os.Stderr, "integration: %s: no subprocess mode %q\n", subprocessVar, mode)
			os.Exit(2)
		}
		os.Exit(run())
	}
	code := runTests(m)
	if seamDir != "" {
		os.RemoveAll(seamDir)
	}
	os.Exit(code)
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

// buildBinaries builds boxsh, boxsh-init and boxsh-launch into dir.
func buildBinaries(dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// As just build: the front with libseccomp (the sandbox needs it).
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "seccomp", "-o", dir+string(filepath.Separator), "./cmd/boxsh", "./cmd/boxsh-init", "./cmd/boxsh-launch")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	if runtime.GOOS == "linux" {
		// As just build: the fork server's library, beside boxsh-init, so
		// that bash calls run on warm shells, as installed.
		cmd := exec.CommandContext(ctx, "cc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
			"-o", filepath.Join(dir, forkServerLib), "internal/toolhost/bash/zygote/zygote.c")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cc %s: %v\n%s", forkServerLib, err, out)
		}
	}
	return checkBinaries(dir)
}

// forkServerLib is the fork server's library, which boxsh-init finds
// beside itself (Linux).
const forkServerLib = "boxsh-zygote.so"

func checkBinaries(dir string) error {
	for _, name := range []string{"boxsh", "boxsh-init", "boxsh-launch"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable file", filepath.Join(dir, name))
		}
	}
	if runtime.GOOS == "linux" {
		// Without it every bash call would start its shell by exec, and
		// the warm shells, what users run, would go untested.
		if _, err := os.Stat(filepath.Join(dir, forkServerLib)); err != nil {
			return fmt.Errorf("no fork-server library beside the binaries (just build makes it): %w", err)
		}
	}
	return nil
}

// boxshPath is the boxsh executable under test: the one in binDir, or
// while a test uses it, the test-seam build (useTestSeamFront).
func boxshPath() string {
	if frontOverride != "" {
		return frontOverride
	}
	return filepath.Join(binDir, "boxsh")
}

// frontOverride, when set, is the boxsh that boxshPath names.
var frontOverride string

// seamFront is the test-seam build of boxsh, made once.
var seamFront struct {
	once sync.Once
	path string
	err  error
}

// useTestSeamFront makes the current test run a boxsh built with the
// boxsh_testseam tag (in which BOXSH_PROXY_HOSTS maps names for the
// proxy) with binDir's boxsh-init and fork server. The build is separate
// from binDir, which holds the binaries users run and has no test seam.
func useTestSeamFront(t *testing.T) {
	t.Helper()
	seamFront.once.Do(func() {
		seamFront.path, seamFront.err = buildTestSeamFront()
	})
	if seamFront.err != nil {
		t.Fatalf("test-seam build of boxsh: %v", seamFront.err)
	}
	frontOverride = seamFront.path
	t.Cleanup(func() { frontOverride = "" })
}

// seamDir holds the test-seam build; TestMain removes it.
var seamDir string

// buildTestSeamFront builds the test-seam boxsh (see package seambuild)
// into a temporary directory, with binDir's other binaries.
func buildTestSeamFront() (string, error) {
	dir, err := os.MkdirTemp("", "boxsh-integration-seam-")
	if err != nil {
		return "", err
	}
	seamDir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return seambuild.Build(ctx, binDir, dir)
}
