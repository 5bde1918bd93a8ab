package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/darwin"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/host"
)

// sandboxExec is macOS's tool that runs a program under a Seatbelt
// profile.
const sandboxExec = "/usr/bin/sandbox-exec"

// SandboxSupported tells whether this system can start sandboxes: macOS
// with sandbox-exec.
func SandboxSupported() error {
	if _, err := os.Stat(sandboxExec); err != nil {
		return fmt.Errorf("--sandbox needs %s: %w", sandboxExec, err)
	}
	return nil
}

// Profile is the Seatbelt profile of a sandbox with sb and p, for a
// process started in cwd by a user whose home is home.
func Profile(sb policy.Sandbox, p policy.Policy, home, cwd string) (string, error) {
	return darwin.Generate(darwin.ProfileConfig{
		Sandbox: sb, Policy: p, Home: home, Cwd: cwd,
		TmpDir: os.Getenv("TMPDIR"), HardDenied: policy.HardDeniedWrites,
	})
}

// SandboxCommand is argv run under the Seatbelt profile of sb and p, its
// copy-on-write binds prepared (see PrepareClones).
func SandboxCommand(sb policy.Sandbox, p policy.Policy, home, cwd string, argv []string) (*exec.Cmd, error) {
	if err := PrepareClones(sb.Binds); err != nil {
		return nil, err
	}
	profile, err := Profile(sb, p, home, cwd)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(sandboxExec, append([]string{"-p", profile}, argv...)...)
	cmd.Dir = cwd
	// A working directory in a cow SRC becomes the same place in its DST:
	// the sandbox works in the clone.
	for _, b := range sb.Binds {
		if rel, err := filepath.Rel(b.Src, cwd); b.Mode == policy.CopyOnWrite && err == nil && (rel == "." || filepath.IsLocal(rel)) {
			cmd.Dir = filepath.Join(b.Dst, rel)
		}
	}
	return cmd, nil
}

// PrepareClones makes each cow bind's DST a copy-on-write clone of its SRC
// (APFS clonefile: no data is copied), unless DST already holds a session's
// work: macOS has no overlay file system, so the sandbox works in DST
// itself, and SRC never changes.
func PrepareClones(binds []policy.Bind) error {
	for _, b := range binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		entries, err := os.ReadDir(b.Dst)
		if err != nil {
			return fmt.Errorf("--bind %s: %w", b, err)
		}
		if len(entries) > 0 {
			continue // a session's work, kept
		}
		src, err := os.ReadDir(b.Src)
		if err != nil {
			return fmt.Errorf("--bind %s: %w", b, err)
		}
		for _, e := range src {
			err := unix.Clonefile(filepath.Join(b.Src, e.Name()), filepath.Join(b.Dst, e.Name()), unix.CLONE_NOFOLLOW)
			if err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("--bind %s: clone %s: %w", b, e.Name(), err)
			}
		}
	}
	return nil
}

// startSandboxed starts boxsh-init under the Seatbelt profile of the
// sandbox and policy, with the frame socket as fd 3.
func startSandboxed(ctx context.Context, cfg Config) (*Instance, error) {
	if err := SandboxSupported(); err != nil {
		return nil, err
	}
	front, back, err := host.SocketPair()
	if err != nil {
		return nil, err
	}
	defer back.Close()
	cmd, err := SandboxCommand(cfg.Sandbox, cfg.Policy, cfg.Home, cfg.Cwd, append([]string{cfg.InitPath}, initOptions(cfg).Args()...))
	if err != nil {
		front.Close()
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{back}
	cmd.Env = cfg.Env
	cmd.Stderr = cfg.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		front.Close()
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	return newInstance(front, func() { _ = cmd.Process.Kill() }, cmd.Wait, nil)
}
