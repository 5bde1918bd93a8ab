// Package seambuild builds the test-seam build of boxsh for the few
// end-to-end tests that need its hooks and for the bench.
//
// That build has the boxsh_testseam tag, in which the environment variable
// BOXSH_PROXY_HOSTS maps names to addresses for the network proxy, unchecked,
// so that a stand-in origin on the loopback can be reached by a name, and
// BOXSH_ASK_TIMEOUT bounds the proxy's questions. A released build has no
// such seam; the network tests run it in the stand-in internet of package
// outside instead.
package seambuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// ModuleRoot is the directory of the boxsh module: above this file's
// package, or, in a build without its source paths, what go list names.
func ModuleRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("seambuild: the module's directory: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Build builds boxsh with the boxsh_testseam tag into dir, beside copies of
// binDir's boxsh-init, boxsh-launch and fork server (boxsh finds them next to
// itself), and
// returns the new boxsh's path.
//
// It builds with -trimpath as `just build` does, so that only the packages
// the tag changes are compiled again, and with the version of binDir's boxsh,
// which boxsh-init and boxsh-launch check.
func Build(ctx context.Context, binDir, dir string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	version, err := exec.CommandContext(ctx, filepath.Join(binDir, "boxsh"), "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("seambuild: boxsh --version: %v: %s", err, version)
	}
	build := strings.TrimPrefix(strings.TrimSpace(string(version)), "boxsh version ")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "seccomp,boxsh_testseam",
		"-ldflags", "-X main.version="+build, "-o", dir+string(filepath.Separator), "./cmd/boxsh")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("seambuild: go build: %v\n%s", err, out)
	}
	for _, name := range []string{"boxsh-init", "boxsh-launch", "boxsh-zygote.so"} {
		data, err := os.ReadFile(filepath.Join(binDir, name))
		if os.IsNotExist(err) && name == "boxsh-zygote.so" {
			continue // optional: shells then start by exec
		}
		if err != nil {
			return "", fmt.Errorf("seambuild: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			return "", fmt.Errorf("seambuild: %w", err)
		}
	}
	return filepath.Join(dir, "boxsh"), nil
}
