package runtime

import (
	"context"
	"fmt"
	"os"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/policy"
)

// startSandboxed starts boxsh-init as the first process of a new sandbox,
// with the frame socket as fd 3.
func startSandboxed(ctx context.Context, cfg Config) (*Instance, error) {
	front, back, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer back.Close()
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	opts := sandboxInitOptions(cfg)
	extra := []*os.File{back}
	env := cfg.Env
	// Allowlist: the proxy runs here, and boxsh-init exposes it inside
	// through a yamux session on a second socket.
	stopProxy := func() {}
	if mode, _ := cfg.Policy.Network(); mode == policy.NetworkAllowlist {
		child, stop, err := StartProxy(cfg.Policy, cfg.Log.Named("proxy"))
		if err != nil {
			front.Close()
			return nil, err
		}
		defer child.Close()
		stopProxy = stop
		extra = append(extra, child)
		opts.ProxyFD = ProxyFD
		env = WithProxyEnv(env)
	}
	ct, err := StartContainer(ctx, ContainerConfig{
		Sandbox:    cfg.Sandbox,
		Limits:     LimitsOf(cfg.Policy, true),
		Policy:     cfg.Policy,
		Args:       InitArgs(opts),
		Env:        env,
		Cwd:        cfg.Cwd,
		Home:       cfg.Home,
		InitPath:   cfg.InitPath,
		ForkServer: proc.FindForkServer(cfg.InitPath),
		Stderr:     stderr,
		ExtraFiles: extra,
		Version:    cfg.Version,
		Log:        cfg.Log,
	})
	if err != nil {
		stopProxy()
		front.Close()
		return nil, err
	}
	wait := func() error {
		code, err := ct.Wait()
		if err == nil && code != 0 {
			err = fmt.Errorf("exit status %d", code)
		}
		return err
	}
	in, err := newInstance(front, func() { _ = ct.Signal(os.Kill) }, wait, func() { ct.Destroy(); stopProxy() })
	if in != nil {
		in.protectionLost = ct.ProtectionLost
	}
	return in, err
}

// sandboxInitOptions are boxsh-init's options in a sandbox: those of cfg,
// and the rules file the runtime writes into the root.
func sandboxInitOptions(cfg Config) InitOptions {
	o := initOptions(cfg)
	o.RulesFile = RulesPath
	return o
}
