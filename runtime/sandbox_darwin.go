package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/host"
)

// SandboxSupported tells whether this system can start sandboxes: macOS
// with sandbox-exec.
func SandboxSupported() error {
	if _, err := os.Stat(sandboxExec); err != nil {
		return fmt.Errorf("--sandbox needs %s: %w", sandboxExec, err)
	}
	return nil
}

// SandboxCommand returns argv ready to run under the Seatbelt profile of in,
// with the environment env (nil: boxsh's own).
//
// Before it returns, it prepares the cow binds (see PrepareClones) and makes
// the sandbox's own temporary directory. In allowlist mode it also starts the
// front's network proxy, whose port goes in the profile and whose address goes
// in the environment. stop stops the proxy and removes the temporary directory
// once the command has ended.
func SandboxCommand(in SeatbeltInputs, env, argv []string, log hclog.Logger) (cmd *exec.Cmd, stop func(), err error) {
	if err := PrepareClones(in.Sandbox.Binds); err != nil {
		return nil, nil, err
	}
	sc, err := StartSeatbelt(in, env, argv, log)
	if err != nil {
		return nil, nil, err
	}
	cmd = exec.Command(sc.Args[0], sc.Args[1:]...)
	cmd.Dir = sc.Dir
	cmd.Env = sc.Env
	return cmd, sc.Stop, nil
}

// PrepareClones makes each cow bind's DST a copy-on-write clone of its SRC,
// unless DST already holds a session's work.
//
// The clone is an APFS clonefile, so no data is copied. macOS has no overlay
// file system, so the sandbox works in DST itself, and SRC never changes.
func PrepareClones(binds []policy.Bind) error {
	for _, b := range binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		if err := prepareCowDst(b); err != nil {
			return err
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
	in := SeatbeltInputs{Sandbox: cfg.Sandbox, Policy: cfg.Policy, Home: cfg.Home, Cwd: cfg.Cwd, TmpDir: os.Getenv("TMPDIR"), Proxy: cfg.Proxy}
	cmd, stop, err := SandboxCommand(in, cfg.Env, append([]string{cfg.InitPath}, initOptions(cfg).Args()...), cfg.Log)
	if err != nil {
		front.Close()
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{back}
	cmd.Stderr = cfg.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		front.Close()
		stop()
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	inst, err := newInstance(front, nil, func() { _ = cmd.Process.Kill() }, cmd.Wait, stop)
	if inst != nil {
		inst.pid = cmd.Process.Pid
	}
	return inst, err
}

// startReaper does nothing: a Seatbelt sandbox leaves nothing on the host
// to clean up.
func startReaper(Config) {}
