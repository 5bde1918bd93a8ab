package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/darwin"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/host"
	"github.com/boxsh/boxsh/runtime/plan"
)

// sandboxExec is macOS's tool that runs a program under a Seatbelt
// profile.
const sandboxExec = "/usr/bin/sandbox-exec"

// SeatbeltInputs are what the macOS sandbox of a command depends on. The
// front that runs it and boxsh spec --format sbpl build the profile from
// them through SeatbeltConfig, so that spec prints the profile that runs.
type SeatbeltInputs struct {
	// Sandbox is resolved: --try turned into binds (host.ResolveTry), the
	// policy applied (host.ResolveSandbox).
	Sandbox policy.Sandbox
	// Policy is the merged policy.
	Policy policy.Policy
	// Home, Cwd and TmpDir are the caller's $HOME, working directory and
	// $TMPDIR, as given (SeatbeltConfig resolves them).
	Home, Cwd, TmpDir string
	// ProxyPort is the port of the front's proxy on 127.0.0.1 in
	// allowlist mode (0 in boxsh spec, which starts none).
	ProxyPort int
	// PrivateTmp is the sandbox's own temporary directory. In boxsh spec,
	// which makes none, it is PrivateTmpStandIn.
	PrivateTmp string
	// Proxy observes the network proxy in allowlist mode.
	Proxy host.ProxyHooks
}

// PrivateTmpStandIn is the name boxsh spec shows for the sandbox's own
// temporary directory. The directory gets its real name when the sandbox
// starts.
const PrivateTmpStandIn = "boxsh-sandbox-XXXXXXXX"

// SeatbeltConfig turns in into the configuration of the profile, reading the
// host as boxsh v3 does before it writes its rules.
//
// It reads:
//
//   - every path (binds, working directory, home, $TMPDIR, the policy's
//     absolute paths) with its symbolic links resolved and, on macOS, its
//     names spelled as on disk (host.RealPath). The sandbox matches resolved
//     paths: a bind through a symlink would be unreadable, and a deny through
//     one would not match.
//   - the git control files of the repositories that exist in the wr binds
//     (host.GatherProtection). They are protected there, so the profile need
//     not deny every .git/hooks, and git init and git clone work.
func SeatbeltConfig(in SeatbeltInputs) (darwin.ProfileConfig, error) {
	real := func(p string) string {
		if p == "" || !filepath.IsAbs(p) {
			return p
		}
		return host.RealPath(p)
	}
	if in.Sandbox.Cache != "" {
		// Seatbelt cannot show a directory at another path.
		return darwin.ProfileConfig{}, errors.New("--cache is not supported on macOS: Seatbelt cannot show a directory at another path; point the caches into a wr bind with --env instead")
	}
	sb := in.Sandbox
	sb.Binds = nil
	for _, b := range in.Sandbox.Binds {
		b.Src, b.Dst = real(b.Src), real(b.Dst)
		sb.Binds = append(sb.Binds, b)
	}
	home, cwd := real(in.Home), real(in.Cwd)
	p := in.Policy
	p.DenyRead = realRules(p.DenyRead, real)
	p.AllowRead = realRules(p.AllowRead, real)
	p.DenyWrite = realRules(p.DenyWrite, real)
	p.AllowWrite = realRules(p.AllowWrite, real)

	network, _ := p.Network()
	if sb.NewNetNS && network == policy.NetworkAllowAll {
		network = policy.NetworkDisabled
	}
	cfg := darwin.ProfileConfig{
		Sandbox: sb, Policy: p, Home: home, Cwd: cwd, TmpDir: real(strings.TrimSuffix(in.TmpDir, "/")),
		Network: network, ProxyPort: in.ProxyPort, PrivateTmp: real(in.PrivateTmp),
	}
	switch network {
	case policy.NetworkDisabled:
		cfg.Network = darwin.NetworkDisabled
	case policy.NetworkAllowAll:
		cfg.Network = darwin.NetworkAllowAll
	case policy.NetworkAllowlist:
		cfg.Network = darwin.NetworkAllowlist
	}
	extra := host.ProtectEntries(p)
	for _, e := range append(policy.HardDeniedWrites, extra...) {
		// The .git/ entries come as the paths of the repositories that
		// exist (below); the rest are denied at any depth, created or not.
		if !strings.HasPrefix(e, ".git/") {
			cfg.HardDenied = append(cfg.HardDenied, e)
		}
	}
	prot, err := host.GatherProtection(sb, home, cwd, extra...)
	if err != nil {
		return cfg, err
	}
	for _, hp := range prot.Paths {
		if hp.Tree {
			continue // a writable home's own rule, which Linux makes with mounts
		}
		cfg.Protected = append(cfg.Protected, darwin.Protected{Path: hp.Path, Dir: hp.Dir, Reason: hp.Reason})
	}
	return cfg, nil
}

// realRules resolves the absolute rules without patterns with real.
func realRules(rules []policy.Rule, real func(string) string) []policy.Rule {
	out := make([]policy.Rule, len(rules))
	for i, r := range rules {
		if strings.HasPrefix(r.Value, "/") && !strings.ContainsAny(r.Value, `*?[\`) {
			r.Value = real(r.Value)
		}
		out[i] = r
	}
	return out
}

// SeatbeltProfile is the profile of in: darwin.Generate of SeatbeltConfig.
func SeatbeltProfile(in SeatbeltInputs) (string, error) {
	cfg, err := SeatbeltConfig(in)
	if err != nil {
		return "", err
	}
	return darwin.Generate(cfg)
}

// SeatbeltArgs returns the argument vector that runs argv in the sandbox of in
// (sandbox-exec -p PROFILE argv...), and its working directory.
//
// The directory is the caller's, or the same place in the destination of the
// cow bind whose source holds it, since the sandbox works in the clone.
func SeatbeltArgs(in SeatbeltInputs, argv []string) (args []string, dir string, err error) {
	cfg, err := SeatbeltConfig(in)
	if err != nil {
		return nil, "", err
	}
	profile, err := darwin.Generate(cfg)
	if err != nil {
		return nil, "", err
	}
	dir = cfg.Cwd
	for _, b := range cfg.Sandbox.Binds {
		if rel, err := filepath.Rel(b.Src, cfg.Cwd); b.Mode == policy.CopyOnWrite && err == nil && (rel == "." || filepath.IsLocal(rel)) {
			dir = filepath.Join(b.Dst, rel)
		}
	}
	if dir == "" {
		dir = in.Cwd
	}
	return append([]string{sandboxExec, "-p", profile}, argv...), dir, nil
}

// Seatbelt is a sandboxed command ready to run.
//
// It holds the argument vector (sandbox-exec -p PROFILE argv...), the working
// directory and the environment, and Stop, which undoes what StartSeatbelt
// made once the command has ended.
type Seatbelt struct {
	Args []string
	Dir  string
	Env  []string
	Stop func()
	// Inputs are the inputs of the profile, with what StartSeatbelt made
	// (PrivateTmp, ProxyPort).
	Inputs SeatbeltInputs
}

// StartSeatbelt prepares argv to run in the sandbox of in, with the
// environment env (nil: boxsh's own).
//
// It makes the sandbox's own temporary directory and, in allowlist mode,
// starts the front's proxy. Then it builds the profile with them
// (SeatbeltArgs). The macOS front runs what it returns.
func StartSeatbelt(in SeatbeltInputs, env, argv []string, log hclog.Logger) (*Seatbelt, error) {
	env, removeTmp, err := makePrivateTmp(&in, env)
	if err != nil {
		return nil, err
	}
	env, stopProxy, err := startSeatbeltProxy(&in, env, log)
	if err != nil {
		removeTmp()
		return nil, err
	}
	stop := func() { stopProxy(); removeTmp() }
	args, dir, err := SeatbeltArgs(in, argv)
	if err != nil {
		stop()
		return nil, err
	}
	return &Seatbelt{Args: args, Dir: dir, Env: env, Stop: stop, Inputs: in}, nil
}

// makePrivateTmp makes the sandbox's own temporary directory in the caller's
// $TMPDIR (in.TmpDir, else the system's), and sets in.PrivateTmp.
//
// It returns env with TMPDIR naming the directory, and zsh's TMPPREFIX, which
// zsh uses for here-documents instead of TMPDIR. It also returns the function
// that removes the directory. The shared temporary directories stay read-only;
// this one is the sandbox's alone, as Linux gives each sandbox a /tmp of its
// own.
func makePrivateTmp(in *SeatbeltInputs, env []string) ([]string, func(), error) {
	base := in.TmpDir
	if base == "" {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "boxsh-sandbox-")
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox temporary directory: %w", err)
	}
	in.PrivateTmp = dir
	if env == nil {
		env = os.Environ()
	}
	var out []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); name != "TMPDIR" && name != "TMPPREFIX" {
			out = append(out, kv)
		}
	}
	out = append(out, "TMPDIR="+dir+"/", "TMPPREFIX="+dir+"/zsh")
	return out, func() { _ = os.RemoveAll(dir) }, nil
}

// prepareCowDst makes the destination of a cow bind when it is missing
// (the original clones into a new directory, sandbox_darwin.cpp:448-481)
// and checks that it is a directory.
func prepareCowDst(b policy.Bind) error {
	if err := os.MkdirAll(b.Dst, 0o755); err != nil {
		return fmt.Errorf("--bind %s: %w", b, err)
	}
	return nil
}

// startSeatbeltProxy starts the front's network proxy when the policy's
// network mode is allowlist, as the Linux front does.
//
// On Linux the proxy reaches the sandbox through boxsh-init's forwarder. On
// macOS the sandbox has no network of its own, and reaches the proxy on the
// host's loopback, the only address its profile lets it connect to.
// startSeatbeltProxy sets in.ProxyPort, and returns env with the proxy
// variables (plan.WithProxyEnvAt) and the function that stops the proxy.
// Without allowlist, it returns env as it is.
func startSeatbeltProxy(in *SeatbeltInputs, env []string, log hclog.Logger) ([]string, func(), error) {
	if mode, _ := in.Policy.Network(); mode != policy.NetworkAllowlist {
		return env, func() {}, nil
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	secrets, err := host.PrepareSecrets(in.Policy, os.LookupEnv)
	if err != nil {
		return nil, nil, err
	}
	if len(secrets.Files) > 0 {
		return nil, nil, fmt.Errorf("%w: secret file %s: not on macOS yet (its sandbox reads the host's file)", policy.ErrUsage, secrets.Files[0].Path)
	}
	if secrets.Proxy != nil {
		// No trust store of its own on macOS yet: HTTPS is passed
		// through, as without secrets.
		secrets.Proxy.CA = nil
	}
	hooks := in.Proxy
	hooks.Secrets, hooks.Requests = secrets.Proxy, secrets.Requests
	addr, stop, err := host.ListenProxy(in.Policy, log.Named("proxy"), hooks)
	if err != nil {
		return nil, nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	if in.ProxyPort, err = strconv.Atoi(port); err != nil {
		stop()
		return nil, nil, fmt.Errorf("proxy address %s: %w", addr, err)
	}
	if env == nil {
		env = os.Environ()
	}
	return host.WithEnv(plan.WithProxyEnvAt(env, addr), secrets.Env), stop, nil
}
