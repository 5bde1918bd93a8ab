package plan

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
)

const (
	// defaultHostname is the sandbox's host name.
	defaultHostname = "boxsh"
	// defaultPath is the PATH of a process whose environment has none.
	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// VersionAnnotation is the spec annotation with boxsh's version.
	VersionAnnotation = "org.boxsh.version"
)

// SpecConfig is what BuildSpec makes a spec of.
type SpecConfig struct {
	// Sandbox is the policy. Try must have been turned into its cow bind
	// by the caller (it needs a new directory).
	Sandbox policy.Sandbox
	// Limits are the resource limits of the sandbox's processes.
	Limits Limits
	// Args, Env and Terminal describe the process. Env gets a PATH when
	// it has none.
	Args     []string
	Env      []string
	Terminal bool
	// Cwd is the caller's working directory on the host. The process
	// starts in the same directory inside when the sandbox shows it (see
	// SandboxCwd), else in /.
	Cwd string
	// UID and GID are the caller's ids on the host, root inside.
	UID, GID uint32
	// Groups are the caller's supplementary groups that are also mapped,
	// each to the same gid inside. So files of those groups keep their
	// group in the sandbox, and a cow bind can copy them up.
	Groups []uint32
	// Rootfs is the root directory: absolute, or relative to the bundle.
	Rootfs string
	// InitPath is the host's boxsh-init, bound at initproto.InitMountPath; empty
	// for none.
	InitPath string
	// ForkServer is the host's fork-server library, bound at
	// initproto.ForkServerMountPath; empty for none.
	ForkServer string
	// Hostname is the sandbox's host name (default "boxsh").
	Hostname string
	// Host are the host facts (see host.Gather).
	Host HostFacts
	// Protect are host paths that wr binds expose but that stay
	// read-only, bound over themselves after the binds (see
	// host.GatherProtection). Missing ones get an empty read-only file or
	// directory from Placeholders, or are left out when it is empty.
	Protect []HostPath
	// Placeholders is the host directory of the placeholders (see
	// host.Prepare). It holds an empty file "file", an empty directory
	// "dir", and an unreadable empty file "denied" and directory
	// "denied-dir".
	Placeholders string
	// Rules are the policy's file rules, resolved (see host.Gather).
	Rules FileRules
	// Seccomp is the seccomp filter (default DefaultSeccomp()).
	Seccomp *specs.LinuxSeccomp
	// Version goes into the VersionAnnotation.
	Version string
}

// dockerCaps are Docker's default capabilities but CAP_DAC_OVERRIDE. They
// are the capabilities of root in the sandbox's user namespace: they let
// root own and chmod every file of the mapped user and bind low ports, and
// give nothing over the rest of the host. Without CAP_DAC_OVERRIDE, root
// obeys file modes as the user does outside, so that what a denyRead rule
// covers (a mode-0 placeholder) answers "Permission denied".
var dockerCaps = []string{
	"CAP_AUDIT_WRITE",
	"CAP_CHOWN",
	"CAP_FOWNER",
	"CAP_FSETID",
	"CAP_KILL",
	"CAP_MKNOD",
	"CAP_NET_BIND_SERVICE",
	"CAP_NET_RAW",
	"CAP_SETFCAP",
	"CAP_SETGID",
	"CAP_SETPCAP",
	"CAP_SETUID",
	"CAP_SYS_CHROOT",
}

// maskedPaths and readonlyPaths are runc's and Docker's defaults.
var (
	maskedPaths = []string{
		"/proc/acpi",
		"/proc/asound",
		"/proc/interrupts",
		"/proc/kcore",
		"/proc/keys",
		"/proc/latency_stats",
		"/proc/sched_debug",
		"/proc/scsi",
		"/proc/timer_list",
		"/proc/timer_stats",
		"/sys/devices/virtual/powercap",
		"/sys/firmware",
	}
	readonlyPaths = []string{
		"/proc/bus",
		"/proc/fs",
		"/proc/irq",
		"/proc/sys",
		"/proc/sysrq-trigger",
	}
)

// BuildSpec makes the OCI runtime spec of the sandbox cfg describes (see
// the package documentation for its mounts and process). It reads
// nothing from the host. Errors in the binds are policy.ErrBind.
func BuildSpec(cfg SpecConfig) (*specs.Spec, error) {
	if cfg.Rootfs == "" {
		return nil, errors.New("spec: no root directory")
	}
	if len(cfg.Args) == 0 {
		return nil, errors.New("spec: no process arguments")
	}
	if cfg.Sandbox.Try {
		return nil, errors.New("spec: --try must be turned into a cow bind first")
	}
	binds, err := orderBinds(cfg.Sandbox.Binds)
	if err != nil {
		return nil, err
	}
	if err := checkInPlace(cfg.Sandbox); err != nil {
		return nil, err
	}
	hostname := cfg.Hostname
	if hostname == "" {
		hostname = defaultHostname
	}
	seccomp := cfg.Seccomp
	if seccomp == nil {
		seccomp = DefaultSeccomp()
	}
	env := slices.Clone(cfg.Env)
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		env = append(env, "PATH="+defaultPath)
	}
	if cfg.Placeholders != "" && PlaceholderExcludes(cfg.Protect) != "" {
		env = gitExcludesEnv(env)
	}

	host := cfg.Host
	if cfg.Sandbox.HostSystem {
		host.Etc = nil
	} else {
		host.Whole = nil
	}
	mounts := systemMounts(host, cfg.InitPath, cfg.ForkServer)
	// The binds and the pins, outermost first: a bind of a directory made
	// later would hide the mounts inside it. Then the protected paths.
	var pins []string
	var trees []specs.Mount
	for _, hp := range cfg.Protect {
		if hp.Missing && cfg.Placeholders == "" {
			continue // left out, and its missing directories with it
		}
		if hp.Tree {
			if err := checkCleanAbs("protected", hp.Path); err != nil {
				return nil, err
			}
			trees = append(trees, specs.Mount{Destination: hp.Path, Type: "bind", Source: hp.Path, Options: roBind(true)})
		}
		for _, d := range slices.Concat(hp.Pins, hp.Rebind) {
			if !filepath.IsAbs(d) || filepath.Clean(d) != d {
				return nil, fmt.Errorf("spec: pinned directory %q is not a clean absolute path", d)
			}
			if !slices.Contains(pins, d) {
				pins = append(pins, d)
			}
		}
	}
	// The directories above the paths the file rules cover in wr binds.
	for _, rp := range slices.Concat(cfg.Rules.DenyRead, cfg.Rules.DenyWrite) {
		for _, d := range rp.Pins {
			if err := checkCleanAbs("pinned", d); err != nil {
				return nil, err
			}
			if !slices.Contains(pins, d) {
				pins = append(pins, d)
			}
		}
	}
	var tree []specs.Mount
	if home := privateHome(cfg.Sandbox, host); home != "" {
		tree = append(tree, specs.Mount{Destination: home, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=755"}})
	}
	if cache := cfg.Sandbox.Cache; cache != "" && cfg.Sandbox.Home != "" {
		if err := checkCleanAbs("cache", cache); err != nil {
			return nil, err
		}
		tree = append(tree, specs.Mount{Destination: cacheDir(cfg.Sandbox.Home), Type: "bind", Source: cache, Options: slices.Clone(bindRW)})
		env = CacheEnv(env, cfg.Sandbox.Home)
	}
	for _, b := range binds {
		tree = append(tree, bindMount(b))
	}
	tree = append(tree, trees...) // after the bind that shows them
	for _, d := range pins {
		tree = append(tree, specs.Mount{Destination: d, Type: "bind", Source: d, Options: slices.Clone(bindRW)})
	}
	slices.SortStableFunc(tree, func(a, b specs.Mount) int { return pathtree.Depth(a.Destination) - pathtree.Depth(b.Destination) })
	mounts = append(mounts, tree...)
	mounts = append(mounts, inPlaceViews(cfg.Sandbox, cfg.Rootfs)...)
	var protected []specs.Mount
	for _, hp := range cfg.Protect {
		if err := checkCleanAbs("protected", hp.Path); err != nil {
			return nil, err
		}
		if hp.Tree {
			continue
		}
		opts := roBind(hp.Dir)
		src := hp.Path
		if hp.Missing {
			if cfg.Placeholders == "" {
				continue
			}
			src = filepath.Join(cfg.Placeholders, placeholderName(hp))
		}
		protected = append(protected, specs.Mount{Destination: hp.Path, Type: "bind", Source: src, Options: opts})
	}
	slices.SortStableFunc(protected, func(a, b specs.Mount) int { return pathtree.Depth(a.Destination) - pathtree.Depth(b.Destination) })
	mounts = append(mounts, protected...)
	ruleMounts, err := fileRuleMounts(cfg.Rules, cfg.Placeholders)
	if err != nil {
		return nil, err
	}
	mounts = append(mounts, ruleMounts...)

	namespaces := []specs.LinuxNamespace{
		{Type: specs.PIDNamespace},
		{Type: specs.IPCNamespace},
		{Type: specs.UTSNamespace},
		{Type: specs.MountNamespace},
		{Type: specs.UserNamespace},
	}
	if cfg.Sandbox.NewNetNS {
		namespaces = append(namespaces, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	}

	spec := &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			Terminal: cfg.Terminal,
			User:     specs.User{UID: 0, GID: 0},
			Args:     slices.Clone(cfg.Args),
			Env:      env,
			Cwd:      SandboxCwd(cfg.Sandbox, cfg.Host, cfg.Cwd),
			Capabilities: &specs.LinuxCapabilities{
				Bounding:  slices.Clone(dockerCaps),
				Effective: slices.Clone(dockerCaps),
				Permitted: slices.Clone(dockerCaps),
			},
			NoNewPrivileges: true,
			Rlimits:         cfg.Limits.rlimits(),
		},
		Root:     &specs.Root{Path: cfg.Rootfs, Readonly: true},
		Hostname: hostname,
		Mounts:   mounts,
		Linux: &specs.Linux{
			UIDMappings:   []specs.LinuxIDMapping{{ContainerID: 0, HostID: cfg.UID, Size: 1}},
			GIDMappings:   gidMappings(cfg.GID, cfg.Groups),
			Namespaces:    namespaces,
			Seccomp:       seccomp,
			MaskedPaths:   slices.Clone(maskedPaths),
			ReadonlyPaths: slices.Clone(readonlyPaths),
			Resources:     cfg.Limits.resources(),
		},
	}
	if cfg.Version != "" {
		spec.Annotations = map[string]string{VersionAnnotation: cfg.Version}
	}
	return spec, nil
}

// gidMappings maps gid to root and each of groups to itself, but for the
// gid and root's group, which are mapped already or must not be.
func gidMappings(gid uint32, groups []uint32) []specs.LinuxIDMapping {
	m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: gid, Size: 1}}
	for _, g := range groups {
		if g != 0 && g != gid && !slices.ContainsFunc(m, func(e specs.LinuxIDMapping) bool { return e.HostID == g }) {
			m = append(m, specs.LinuxIDMapping{ContainerID: g, HostID: g, Size: 1})
		}
	}
	return m
}
