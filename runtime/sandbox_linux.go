package runtime

import (
	"context"
	"fmt"
	"os"

	"github.com/boxsh/boxsh/runtime/host"
	"github.com/boxsh/boxsh/runtime/plan"
)

// startSandboxed starts boxsh-init as the first process of a new sandbox,
// with the frame socket as fd 3.
func startSandboxed(ctx context.Context, cfg Config) (*Instance, error) {
	front, back, err := host.SocketPair()
	if err != nil {
		return nil, err
	}
	defer back.Close()
	fwdFront, fwdBack, err := host.SocketPair()
	if err != nil {
		front.Close()
		return nil, err
	}
	defer fwdBack.Close()
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	launcher := cfg.LauncherPath
	if launcher == "" {
		if launcher, err = host.FindLauncher(cfg.InitPath); err != nil {
			front.Close()
			fwdFront.Close()
			return nil, err
		}
	}
	ct, err := host.StartContainer(ctx, host.ContainerConfig{
		Mode:     plan.ModeServe,
		Sandbox:  cfg.Sandbox,
		Policy:   cfg.Policy,
		Init:     initOptions(cfg),
		Env:      cfg.Env,
		Cwd:      cfg.Cwd,
		Home:     cfg.Home,
		InitPath: cfg.InitPath,
		Stderr:   stderr,

		LauncherPath: launcher,
		Files:        map[string]*os.File{plan.FramesDescriptor: back, plan.ForwardDescriptor: fwdBack},
		Version:      cfg.Version,
		Log:          cfg.Log,
		Proxy:        cfg.Proxy,
		FileSize:     cfg.FileSize,
	})
	if err == nil && cfg.Sandboxed != nil {
		if err = cfg.Sandboxed(ct.Pid()); err != nil {
			ct.Destroy()
		}
	}
	if err != nil {
		front.Close()
		fwdFront.Close()
		return nil, err
	}
	wait := func() error {
		code, err := ct.Wait()
		if err == nil && code != 0 {
			err = fmt.Errorf("exit status %d", code)
		}
		return err
	}
	destroy := ct.Destroy
	if cfg.DetachDestroy {
		destroy = ct.DestroyExited
	}
	in, err := newInstance(front, fwdFront, func() { _ = ct.Signal(os.Kill) }, wait, destroy)
	if in != nil {
		in.protectionLost = ct.ProtectionLost
		in.pid, in.cgroup, in.setup = ct.Pid(), ct.CgroupDir(), ct.InitSetup()
		if cfg.ReadQuick != nil {
			in.root = newFrontRoot(ct, cfg.Sandbox.Binds)
		}
	}
	return in, err
}

// SandboxSupported tells whether this binary can start sandboxes (see
// host.SandboxSupported).
func SandboxSupported() error { return host.SandboxSupported() }

// startReaper starts the front's reaper (host.StartReaper) for a sandbox:
// before the front becomes a child subreaper, which would adopt it.
func startReaper(cfg Config) {
	if !cfg.Sandbox.Enabled {
		return
	}
	if err := host.StartReaper(); err != nil {
		cfg.Log.Warn("placeholders will stay on the host until the next sandbox starts if boxsh is killed", "error", err)
	}
}
