package plan

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/policy"
)

// Mode is what runs as a sandbox's first process.
type Mode int

const (
	// ModeServe is boxsh-init serving calls on its channel socket
	// (initproto.ChannelFD): boxsh --rpc --sandbox, and boxsh spec.
	ModeServe Mode = iota
	// ModeExec is boxsh-init --exec running one command as a minimal init.
	// The command is the shell of shell mode and --try, or the command
	// after --.
	ModeExec
)

func (m Mode) String() string {
	if m == ModeExec {
		return "exec"
	}
	return "serve"
}

// Target is who starts a planned sandbox.
type Target int

const (
	// TargetStart is boxsh starting it itself, with the front beside it (see
	// host.StartContainer).
	TargetStart Target = iota
	// TargetBundle is boxsh spec --bundle, a spec file for another runtime.
	// boxsh spec prepares its root directory, with the plan's Files written
	// into it.
	TargetBundle
	// TargetPrint is boxsh spec: a spec file for another runtime and a root
	// directory boxsh does not prepare.
	TargetPrint
)

// The annotations of a planned spec. Each names something of the sandbox
// that the spec's other fields do not carry; README.md lists them.
const (
	// annotationPrefix starts every annotation of boxsh.
	annotationPrefix = "org.boxsh."
	// ModeAnnotation is the Mode ("serve" or "exec").
	ModeAnnotation = annotationPrefix + "mode"
	// FDAnnotation + N is what descriptor N of the first process must be
	// ("frames", "lifeline", "proxy").
	FDAnnotation = annotationPrefix + "fd."
	// LifelineAnnotation, on a printed ModeExec spec, is the --lifeline
	// option that boxsh gives boxsh-init. The printed spec leaves it out,
	// since no other runtime holds the pipe's write end.
	LifelineAnnotation = annotationPrefix + "lifeline"
	// initAnnotation is "missing" when boxsh-init was not found and the
	// command runs as the first process itself.
	initAnnotation = annotationPrefix + "init"
	// CgroupAnnotation holds the policy's sandbox-wide limits
	// ("memory=N,pids=N,cpus=F") when the spec carries no cgroup for them
	// (linux.resources). Only boxsh started as root applies them.
	CgroupAnnotation = annotationPrefix + "cgroup"
	// SeccompFlagsAnnotation is the seccomp flag boxsh adds at start
	// (SECCOMP_FILTER_FLAG_SPEC_ALLOW), which runc 1.1 refuses in a spec.
	SeccompFlagsAnnotation = annotationPrefix + "seccomp.flags"
	// seccompLoaderAnnotation is "boxsh-init" when boxsh-init is the
	// sandbox's first process. boxsh then compiles the spec's filter in
	// the front, and boxsh-init loads it as its first act, instead of the
	// runtime's init compiling it. It is the same program (see
	// runtime/host). Another runtime loads the spec's filter.
	seccompLoaderAnnotation = annotationPrefix + "seccomp.loader"
	// ParentDeathAnnotation is the signal the sandbox's first process
	// gets when the front dies (SIGKILL).
	ParentDeathAnnotation = annotationPrefix + "parent-death-signal"
	// DeviceRulesAnnotation is "none": boxsh drops the device cgroup
	// rules the runtime would add.
	DeviceRulesAnnotation = annotationPrefix + "device-rules"
	// InlineAnnotation + PATH ("copy") marks an /etc entry that boxsh may
	// copy into the root at start. boxsh copies it instead of binding it
	// when it is small and readable. The spec keeps the bind.
	InlineAnnotation = annotationPrefix + "inline."
	// PlaceholderAnnotation + PATH ("file", "dir", "commondir" or
	// "mcp.json") marks a missing protected path. boxsh makes it on the
	// host at start, binds an empty read-only placeholder over it, and
	// removes it after. The printed spec leaves it out.
	PlaceholderAnnotation = annotationPrefix + "placeholder."
	// FileAnnotation + PATH is a file boxsh writes into the root before
	// the start, with its content as the value.
	FileAnnotation = annotationPrefix + "file."
	// cowAnnotation + DST ("upper=DST,work=DIR") marks a cow bind whose
	// host directories boxsh makes, private, before the start.
	cowAnnotation = annotationPrefix + "cow."
)

// Config is what Build makes a plan of.
//
// It holds the mode, the options, the policy, the command, and the host facts
// gathered for them.
type Config struct {
	Mode   Mode
	Target Target
	// Sandbox is the sandbox, resolved: --try turned into binds
	// (ResolveTry), the policy's binds added and its network applied
	// (ResolveSandbox).
	Sandbox policy.Sandbox
	// Policy is the merged policy (limits, network).
	Policy policy.Policy
	// Command is what ModeExec runs (argv).
	Command []string
	// Init are boxsh-init's options for ModeServe from the command line:
	// workers, shell, log level. The plan adds the policy's limits, the
	// rules file and the proxy.
	Init initproto.InitOptions
	// Forward gives boxsh-init the forwarding socket of the ports the
	// front exposes, as the last descriptor. It is for TargetStart only: a
	// printed spec has no front to forward.
	Forward bool
	// Env is the process's environment (the policy's, see
	// policy.CommandEnv); the plan adds the proxy's variables and a
	// PATH.
	Env      []string
	Terminal bool
	// Cwd is the caller's working directory on the host (see SandboxCwd).
	Cwd string
	// UID and GID are the caller's ids on the host.
	UID, GID uint32
	// Groups are the caller's supplementary groups that the user namespace
	// also maps, each to its own gid. newgidmap writes such a map (see
	// host.MappedGroups).
	Groups []uint32
	// Rootfs is the root directory: absolute, or relative to the bundle.
	Rootfs string
	// InitPath is the host's boxsh-init; "" means not found, allowed only
	// for a printed ModeExec spec. ForkServer is its fork-server library,
	// or "" for none. It is bound for ModeServe only, whose worker pool
	// uses it.
	InitPath, ForkServer string
	// Host, Protect and Rules are the host facts, the protected paths
	// and the resolved file rules (see host.Gather).
	Host    HostFacts
	Protect []HostPath
	Rules   FileRules
	// Placeholders is the directory of placeholders (TargetStart, and
	// TargetBundle's in the bundle; see host.Prepare). Without it, the
	// missing protected paths are left out of the spec, and what the
	// file rules cover is covered by /dev/null and tmpfs instead.
	Placeholders string
	// Cgroup is the sandbox's own cgroup path when it gets one (TargetStart as
	// root, see host.SandboxCgroup); "": none.
	Cgroup string
	// Version goes into the VersionAnnotation.
	Version string
	// Seccomp is the seccomp filter (default DefaultSeccomp()).
	Seccomp *specs.LinuxSeccomp
	// SecretFiles are credentials files the sandbox sees with stand-ins
	// (see adjustSecretFiles).
	SecretFiles []File
	// Trust, when set, is what the sandbox trusts besides the host's
	// roots: the CA of the proxy, which terminates TLS to put secrets
	// in requests (see adjustTrust).
	Trust *Trust
}

// Trust is the trust store of a sandbox whose proxy terminates TLS.
type Trust struct {
	// CA is the proxy's CA certificate, PEM-encoded.
	CA []byte
	// Bundle is the host's roots followed by CA.
	Bundle []byte
	// Over is the host's bundle file the sandbox sees Bundle in place
	// of, or "" when the host has none.
	Over string
}

// Descriptor is one descriptor the first process finds open.
type Descriptor struct {
	FD int
	// Name is "frames", "lifeline" or "proxy".
	Name string
}

// File is a file written into the root before the start.
type File struct {
	// Path is its path in the sandbox.
	Path    string
	Content []byte
}

// Plan is a sandbox, planned: its spec, and what boxsh does besides when
// it starts it.
type Plan struct {
	// Spec is the OCI runtime spec (the one boxsh spec prints).
	Spec *specs.Spec
	// Descriptors are those of the process from 3 on, in order: the
	// starter passes one file for each (see ExtraFiles).
	Descriptors []Descriptor
	// Proxy tells that the front serves the network proxy on the
	// "proxy" descriptor (allowlist network policy).
	Proxy bool
	// Files are written into the root before the start.
	Files []File
	// Inline are the /etc entries the starter may copy into the root
	// instead of binding them. It copies the small and readable ones.
	Inline []string
	// Annotations name what the spec's other fields do not carry. They are
	// the annotations of a printed spec, each starting with
	// "org.boxsh.".
	Annotations map[string]string
	// SeccompFlags are added to the seccomp filter at start.
	// ParentDeathSignal is sent to the first process when the front dies.
	// NoDeviceRules drops the device cgroup rules.
	SeccompFlags      []specs.LinuxSeccompFlag
	ParentDeathSignal string
	NoDeviceRules     bool
	// Setup is what the front's hello tells boxsh-init serving calls (see
	// initproto.Setup): its options that are not on its command line.
	Setup initproto.Setup
	// InitLoadsSeccomp tells that the first process is boxsh-init. It can
	// load the seccomp program the front compiled as its first act,
	// instead of the runtime's init compiling the filter.
	InitLoadsSeccomp bool

	// What host.Prepare makes on the host before the start (see
	// adjustPrepare).

	// Root are the entries of the root directory. They are the mount
	// points, the symlinks of a merged /usr and of /etc entries, and
	// boxsh's directory.
	Root []RootEntry
	// Placeholders is the host directory of the placeholders
	// (Config.Placeholders), or "" for none. They are bound over the
	// missing protected paths and over what the file rules cover.
	Placeholders string
	// Protect are the protected paths (Config.Protect). The directories
	// above the missing ones are made, their placeholders are held and
	// removed after the sandbox, and all are watched while it runs.
	Protect []HostPath
	// Cow are the cow binds, whose host directories are made private
	// (CowDirs) and watched while the sandbox runs.
	Cow []policy.Bind
}

// Descriptor names.
const (
	FramesDescriptor   = "frames"
	LifelineDescriptor = "lifeline"
	ProxyDescriptor    = "proxy"
	ForwardDescriptor  = "forward"
)

// Build plans the sandbox cfg describes (see the steps above). It reads
// nothing from the host. Errors in the binds are policy.ErrBind.
func Build(cfg Config) (*Plan, error) {
	if cfg.Mode == ModeExec && len(cfg.Command) == 0 {
		return nil, errors.New("plan: no command to run")
	}
	if cfg.InitPath == "" && (cfg.Mode == ModeServe || cfg.Target == TargetStart) {
		return nil, errors.New("plan: no boxsh-init")
	}
	p := &Plan{}
	ann := map[string]string{ModeAnnotation: cfg.Mode.String()}
	args, env, limits := p.planProcess(cfg, ann)
	// Only boxsh-init's worker pool uses the fork server.
	forkServer := cfg.ForkServer
	if cfg.Mode != ModeServe {
		forkServer = ""
	}
	spec, err := BuildSpec(SpecConfig{
		Sandbox:      cfg.Sandbox,
		Limits:       limits,
		Rules:        cfg.Rules,
		Args:         args,
		Env:          env,
		Terminal:     cfg.Terminal,
		Cwd:          cfg.Cwd,
		UID:          cfg.UID,
		GID:          cfg.GID,
		Groups:       cfg.Groups,
		Rootfs:       cfg.Rootfs,
		InitPath:     cfg.InitPath,
		ForkServer:   forkServer,
		Host:         cfg.Host,
		Protect:      cfg.Protect,
		Placeholders: cfg.Placeholders,
		Version:      cfg.Version,
		Seccomp:      cfg.Seccomp,
	})
	if err != nil {
		return nil, err
	}
	p.Spec = spec
	for _, step := range []func(Config, map[string]string) error{
		p.adjustCgroup, p.adjustSeccomp, p.adjustParentDeath, p.adjustDevices,
		p.adjustResolvConf, p.adjustTrust, p.adjustSecretFiles, p.adjustInlineEtc, p.adjustPlaceholders, p.adjustFiles, p.adjustCowDirs,
		p.adjustPrepare,
	} {
		if err := step(cfg, ann); err != nil {
			return nil, err
		}
	}
	p.Annotations = ann
	// A spec boxsh starts itself carries the plan's fields instead (its
	// annotations would only become libcontainer's labels).
	if cfg.Target != TargetStart {
		if spec.Annotations == nil {
			spec.Annotations = map[string]string{}
		}
		maps.Copy(spec.Annotations, ann)
	}
	return p, nil
}

// planProcess plans the first process: its arguments, environment, limits and
// descriptors.
//
// ModeServe runs boxsh-init with the channel socket at initproto.ChannelFD.
// Its options carry the policy's per-command limits, timeout and output cap,
// which do not bind boxsh-init itself (see Limits). Except in a printed spec,
// it also gets the rules file (see adjustFiles).
//
// ModeExec runs boxsh-init --exec -- COMMAND, every process under the policy's
// limits as rlimits. When boxsh starts it, it gets the lifeline pipe at
// initproto.LifelineFD. A printed spec has no front to hold the pipe, so the
// option is left out and named in LifelineAnnotation. A printed ModeExec spec
// without a boxsh-init runs the command itself (initAnnotation).
//
// Under an allowlist network policy, both get the proxy socket at
// initproto.ProxyFD and the variables that point programs at it.
func (p *Plan) planProcess(cfg Config, ann map[string]string) (args, env []string, limits Limits) {
	env = slices.Clone(cfg.Env)
	allowlist := false
	if mode, _ := cfg.Policy.Network(); mode == policy.NetworkAllowlist {
		allowlist = true
		env = withProxyEnv(env)
		if cfg.Trust != nil && cfg.Target != TargetPrint {
			env = withTrustEnv(env)
		}
	}
	var o initproto.InitOptions
	if cfg.Mode == ModeServe {
		o = ServeOptions(cfg.Init, cfg.Policy, true)
		o.Exec, o.Command, o.Lifeline = false, nil, 0
		if cfg.Target != TargetPrint {
			o.RulesFile = initproto.RulesPath
		}
		p.Descriptors = append(p.Descriptors, Descriptor{initproto.ChannelFD, FramesDescriptor})
		limits = limitsOf(cfg.Policy, true)
	} else {
		o = initproto.InitOptions{Exec: true, Command: cfg.Command}
		if cfg.Target == TargetStart {
			o.Lifeline = initproto.LifelineFD
			p.Descriptors = append(p.Descriptors, Descriptor{initproto.LifelineFD, LifelineDescriptor})
		} else {
			ann[LifelineAnnotation] = strconv.Itoa(initproto.LifelineFD)
		}
		limits = limitsOf(cfg.Policy, false)
	}
	if allowlist {
		p.Proxy = true
		o.ProxyFD = initproto.ProxyFD
		o.EgressPorts = egressPorts(cfg.Policy)
		p.Descriptors = append(p.Descriptors, Descriptor{initproto.ProxyFD, ProxyDescriptor})
	}
	if cfg.Forward && cfg.Target == TargetStart {
		o.ForwardFD = 3 + len(p.Descriptors)
		p.Descriptors = append(p.Descriptors, Descriptor{o.ForwardFD, ForwardDescriptor})
	}
	if cfg.Mode == ModeServe {
		p.Setup = o.Setup()
	}
	for _, d := range p.Descriptors {
		ann[FDAnnotation+strconv.Itoa(d.FD)] = d.Name
	}
	limits.NoFile = cfg.Host.NoFile
	if cfg.Mode == ModeExec && cfg.InitPath == "" {
		ann[initAnnotation] = "missing"
		return slices.Clone(cfg.Command), env, limits
	}
	return initArgs(o), env, limits
}

// initArgs are the arguments of boxsh-init inside the sandbox.
func initArgs(o initproto.InitOptions) []string {
	return append([]string{initproto.InitMountPath}, o.Args()...)
}

// adjustCgroup gives the sandbox its own cgroup with the policy's
// sandbox-wide limits when boxsh starts it as root (cfg.Cgroup). Else the
// spec carries no linux.resources (a rootless runtime has no cgroup to
// use, and whether another runtime has one is not known here), and
// CgroupAnnotation names the limits left out.
func (p *Plan) adjustCgroup(cfg Config, ann map[string]string) error {
	c := limitsOf(cfg.Policy, cfg.Mode == ModeServe).Cgroup
	if c == nil {
		p.Spec.Linux.Resources = nil
		return nil
	}
	if cfg.Target == TargetStart && cfg.Cgroup != "" {
		p.Spec.Linux.CgroupsPath = cfg.Cgroup
		return nil
	}
	p.Spec.Linux.Resources = nil
	var parts []string
	if c.Memory > 0 {
		parts = append(parts, "memory="+strconv.FormatInt(c.Memory, 10))
	}
	if c.Pids > 0 {
		parts = append(parts, "pids="+strconv.Itoa(c.Pids))
	}
	if c.CPUs > 0 {
		parts = append(parts, "cpus="+strconv.FormatFloat(c.CPUs, 'g', -1, 64))
	}
	if len(parts) > 0 {
		ann[CgroupAnnotation] = strings.Join(parts, ",")
	}
	return nil
}

// adjustSeccomp lets the sandbox's processes keep speculative store
// bypass and indirect branch speculation (SECCOMP_FILTER_FLAG_SPEC_ALLOW).
// Without it, the kernel's default "seccomp" mode of the Spectre
// mitigations forces them off for every filtered process, which slows
// shell commands in the sandbox markedly (see docs/perf.md). Those
// mitigations shield the filtered process from others; the host's
// processes keep theirs. The flag goes into the runtime's configuration at
// start, not into the spec, because runc 1.1 (Debian's) refuses seccomp
// flags in a spec.
func (p *Plan) adjustSeccomp(cfg Config, ann map[string]string) error {
	p.SeccompFlags = []specs.LinuxSeccompFlag{specs.LinuxSeccompFlagSpecAllow}
	ann[SeccompFlagsAnnotation] = string(specs.LinuxSeccompFlagSpecAllow)
	if cfg.Mode == ModeServe || cfg.InitPath != "" {
		p.InitLoadsSeccomp = true
		ann[seccompLoaderAnnotation] = "boxsh-init"
	}
	return nil
}

// adjustParentDeath kills the sandbox's first process, and with it the
// sandbox, when the front dies (runtime-spec has no field for it).
func (p *Plan) adjustParentDeath(_ Config, ann map[string]string) error {
	p.ParentDeathSignal = "SIGKILL"
	ann[ParentDeathAnnotation] = p.ParentDeathSignal
	return nil
}

// adjustDevices drops the device cgroup rules the runtime adds.
//
// A rootless runtime cannot apply them, and in the sandbox's user namespace no
// process can make a device node. The only devices are the few the runtime
// binds into /dev. (Applying the rules would link the cgroup v2 eBPF device
// filter, and with it a large share of the front's size, which libcontainer
// copies at every start.)
func (p *Plan) adjustDevices(_ Config, ann map[string]string) error {
	p.NoDeviceRules = true
	ann[DeviceRulesAnnotation] = "none"
	return nil
}

// adjustInlineEtc lists the /etc binds that the starter may copy into the root
// instead.
//
// The starter decides at start, for the small and readable ones. The spec
// keeps the binds, so that it works with any root.
func (p *Plan) adjustInlineEtc(cfg Config, ann map[string]string) error {
	etc := etcSet(cfg.Host)
	for _, m := range p.Spec.Mounts {
		if inlineCandidate(m, etc) {
			p.Inline = append(p.Inline, m.Destination)
			ann[InlineAnnotation+m.Destination] = "copy"
		}
	}
	return nil
}

// adjustPlaceholders names the missing protected paths.
//
// boxsh makes each on the host at start (an empty file or directory, a
// commondir holding "."), binds a read-only placeholder over it, and removes
// it after the sandbox. A printed spec, with no placeholders, leaves them out.
// The spec of a bundle binds the bundle's placeholders over them as boxsh
// does, and names none: the runtime makes the mount points on the host, and
// they stay after the run, empty, and covered again by the next sandbox.
func (p *Plan) adjustPlaceholders(cfg Config, ann map[string]string) error {
	if cfg.Target == TargetBundle {
		return nil
	}
	for _, hp := range cfg.Protect {
		if hp.Missing {
			ann[PlaceholderAnnotation+hp.Path] = placeholderName(hp)
		}
	}
	return nil
}

// adjustFiles plans the files written into the root.
//
// That is the rules file of boxsh-init serving calls in a sandbox: the paths
// the policy covers, for the file tools' messages. A printed spec's boxsh-init
// goes without.
func (p *Plan) adjustFiles(cfg Config, ann map[string]string) error {
	if ex := PlaceholderExcludes(cfg.Protect); ex != "" && cfg.Placeholders != "" {
		p.Files = append(p.Files, File{Path: initproto.GitExcludesPath, Content: []byte(ex)})
		ann[FileAnnotation+initproto.GitExcludesPath] = ex
	}
	if cfg.Mode != ModeServe {
		return nil
	}
	b, err := rulesFileContent(cfg.Rules, cfg.Protect)
	if err != nil {
		return fmt.Errorf("plan: rules file: %w", err)
	}
	p.Files = append(p.Files, File{Path: initproto.RulesPath, Content: b})
	ann[FileAnnotation+initproto.RulesPath] = string(b)
	return nil
}

// adjustCowDirs names the cow binds (Plan.Cow) and their host directories
// (CowDirs), which host.Prepare makes, private, before the start.
func (p *Plan) adjustCowDirs(cfg Config, ann map[string]string) error {
	for _, b := range cfg.Sandbox.Binds {
		if b.Mode == policy.CopyOnWrite {
			upper, work := CowDirs(b)
			ann[cowAnnotation+b.Dst] = "upper=" + upper + ",work=" + work
			p.Cow = append(p.Cow, b)
		}
	}
	return nil
}

// adjustPrepare names what host.Prepare makes on the host for the sandbox.
//
// That is the root directory's entries for the host facts, the placeholders,
// and the directories above the missing protected paths; for the cow
// directories, see adjustCowDirs. A printed spec names them too; boxsh spec
// prepares none of them.
func (p *Plan) adjustPrepare(cfg Config, _ map[string]string) error {
	p.Root = rootEntries(cfg.Host)
	if p.Proxy && cfg.Target != TargetPrint && !cfg.Sandbox.HostSystem && !hostHasResolvConf(cfg.Host) {
		p.Root = append(p.Root, RootEntry{Path: resolvConf})
	}
	p.Placeholders = cfg.Placeholders
	p.Protect = slices.Clone(cfg.Protect)
	return nil
}

// ServeOptions returns boxsh-init's options o for serving calls under the
// policy p.
//
// It adds the policy's per-command limits, timeout and output cap. boxsh-init
// applies them to each command it starts, so they do not bind boxsh-init
// itself (see Limits). RLIMIT_NPROC counts the tasks of the user. Only in a
// sandbox's user namespace (sandboxed) are those the sandbox's alone, so only
// there are the policy's pids a limit.
func ServeOptions(o initproto.InitOptions, p policy.Policy, sandboxed bool) initproto.InitOptions {
	o.TimeoutDefault = p.TimeoutDefault.Value
	o.MaxOutput = p.MaxOutput.Value
	o.Memory = p.Memory.Value
	if sandboxed {
		o.Pids = p.Pids.Value
	}
	return o
}

// etcSet is the set of the host's /etc entries of host.
func etcSet(host HostFacts) map[string]bool {
	etc := make(map[string]bool, len(host.Etc))
	for _, hp := range host.Etc {
		etc[hp.Path] = true
	}
	return etc
}

// ExtraFiles orders files by the plan's descriptors: files maps a
// descriptor name to the file the starter passes for it. A missing one is
// an error.
func (p *Plan) ExtraFiles(files map[string]*os.File) ([]*os.File, error) {
	var out []*os.File
	for i, d := range p.Descriptors {
		if d.FD != 3+i {
			return nil, fmt.Errorf("plan: descriptor %d (%s) out of order", d.FD, d.Name)
		}
		f, ok := files[d.Name]
		if !ok || f == nil {
			return nil, fmt.Errorf("plan: no file for descriptor %d (%s)", d.FD, d.Name)
		}
		out = append(out, f)
	}
	return out, nil
}

// inlineCandidate tells whether the starter may copy the mount m instead of
// binding it: a read-only bind of one of the host's /etc entries etc onto
// itself.
func inlineCandidate(m specs.Mount, etc map[string]bool) bool {
	return m.Type == "bind" && m.Source == m.Destination && etc[m.Destination] && slices.Contains(m.Options, "ro")
}
