package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/boxsh/boxsh/integration/internal/seambuild"
)

// The floors' rows in the start comparison: the floor sandbox started
// through boxsh-launch, and by libcontainer in lcfloor's own process; a Go
// program that only executes sh -c (the plain start's).
const (
	floorLabel       = "floor"
	floorDirectLabel = "floor-direct"
	execFloorLabel   = "exec-floor"
)

// isFloor tells a floor's row.
func isFloor(label string) bool {
	return label == floorLabel || label == floorDirectLabel || label == execFloorLabel
}

// buildFloor builds integration/bench/lcfloor into dir, as `just build`
// builds the launcher (static, so that its start is alike; without VCS
// stamps, which another user's checkout refuses), and
// integration/bench/execfloor, and returns the floors' cases: the floor
// sandbox started with the boxsh-launch beside bin, and by libcontainer in
// lcfloor's process; execfloor's -c true.
func buildFloor(ctx context.Context, bin, dir string) ([]*startCase, error) {
	root, err := seambuild.ModuleRoot()
	if err != nil {
		return nil, err
	}
	version, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("boxsh --version: %v: %s", err, version)
	}
	out := filepath.Join(dir, "lcfloor")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags", "seccomp,osusergo,netgo",
		"-ldflags", "-s -w -linkmode external -extldflags -static", "-o", out, "./integration/bench/lcfloor")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build of lcfloor: %v\n%s", err, b)
	}
	execOut := filepath.Join(dir, "execfloor")
	cmd = exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", execOut, "./integration/bench/execfloor")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build of execfloor: %v\n%s", err, b)
	}
	// The sandbox's user must reach it through the temporary directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	build := strings.TrimPrefix(strings.TrimSpace(string(version)), "boxsh version ")
	return []*startCase{
		{Kind: startSandboxShell, Label: floorLabel, Bin: out, Args: []string{"-launcher", filepath.Join(filepath.Dir(bin), "boxsh-launch"), "-version", build}},
		{Kind: startSandboxShell, Label: floorDirectLabel, Bin: out, Args: []string{"-direct"}},
		{Kind: startPlainShell, Label: execFloorLabel, Bin: execOut, Args: []string{"-c", "true"}},
	}, nil
}
