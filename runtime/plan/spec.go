package plan

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/frame"
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

// SystemPaths are the top-level system directories the sandbox gets from
// the host: bound read-only when they are directories, recreated when they
// are symlinks.
var SystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// EtcPaths are the /etc entries the sandbox gets from the host, read-only,
// when they exist: users and groups, name resolution, the dynamic linker's
// configuration, certificates, time zone, the Debian alternatives (which
// many /usr/bin commands are symlinks into), locale and shell defaults.
var EtcPaths = []string{
	"/etc/alternatives",
	"/etc/bash.bashrc",
	"/etc/ca-certificates",
	"/etc/ca-certificates.conf",
	"/etc/crypto-policies",
	"/etc/debian_version",
	"/etc/gai.conf",
	"/etc/gitconfig",
	"/etc/group",
	"/etc/host.conf",
	"/etc/hosts",
	"/etc/inputrc",
	"/etc/ld.so.cache",
	"/etc/ld.so.conf",
	"/etc/ld.so.conf.d",
	"/etc/locale.alias",
	"/etc/localtime",
	"/etc/lsb-release",
	"/etc/mime.types",
	"/etc/mtab",
	"/etc/networks",
	"/etc/nsswitch.conf",
	"/etc/os-release",
	"/etc/passwd",
	"/etc/pki",
	"/etc/profile",
	"/etc/profile.d",
	"/etc/protocols",
	"/etc/resolv.conf",
	"/etc/services",
	"/etc/ssl",
	"/etc/terminfo",
	"/etc/timezone",
}

// HostPath is what the host has at Path.
type HostPath struct {
	Path string
	// Dir tells whether Path, symlinks followed, is a directory.
	Dir bool
	// Link is the target of Path when Path is a symlink.
	Link string
	// Missing tells that Path does not exist on the host (a protected
	// path that must not be created either; Dir then tells what it would
	// be). MissingFrom is its first ancestor (or Path itself) that does
	// not exist: the runtime creates the mount point from there, and
	// the starter removes it again.
	Missing     bool
	MissingFrom string
	// Pins are the directories between the writable bind that holds a
	// protected path and the path itself. They are bound onto themselves
	// (writable, as before) so that the sandbox cannot rename or remove
	// them: a directory that holds a mount point can be renamed, and with
	// it the protection would go (mv ~/proj x; mkdir -p ~/proj/.git/hooks).
	Pins []string `json:",omitempty"`
	// Content is what the placeholder of a Missing file holds (a
	// missing .git/commondir gets ".", which git reads as none).
	Content string `json:",omitempty"`
	// Reason is why the path is protected, for messages.
	Reason string `json:",omitempty"`
	// Tree marks a directory bound read-only over itself in depth order
	// with the binds (a writable home, see host.GatherProtection), so that
	// the binds inside it and Rebind come after it.
	Tree bool `json:",omitempty"`
	// Rebind are the directories in a Tree path that stay writable: bound
	// onto themselves, writable, like Pins (but not watched: a change on
	// the host there only makes them read-only).
	Rebind []string `json:",omitempty"`
}

// HostFacts are the facts about the host that the spec depends on, so that
// BuildSpec itself reads nothing (see host.Gather).
type HostFacts struct {
	// System are the SystemPaths that exist on the host.
	System []HostPath
	// Etc are the EtcPaths that exist on the host (symlinks whose target
	// does not exist are left out).
	Etc []HostPath
	// Whole are the HostSystemPaths that are directories on the host.
	Whole []HostPath
	// NoFile is the limit of open files boxsh was started with, which
	// every process of the sandbox gets (RLIMIT_NOFILE), as every command
	// boxsh runs outside a sandbox does; nil when unknown.
	NoFile *Rlimit
}

// Rlimit is a soft and hard resource limit.
type Rlimit struct {
	Soft, Hard uint64
}

// HostSystemPaths are the directories a sandbox with
// policy.Sandbox.HostSystem (--try) shows whole, read-only, instead of
// the EtcPaths.
var HostSystemPaths = []string{"/etc", "/var", "/run"}

// etcSymlink tells whether the /etc entry hp is recreated as a symlink in
// the root rather than bound: when it is a symlink into a tree the sandbox
// has anyway (/usr, /proc), so that readlink still works on it (as on
// /etc/localtime, which names the time zone, and /etc/mtab). A symlink
// elsewhere (/etc/resolv.conf -> /run/...) is bound, which follows it.
func etcSymlink(hp HostPath) bool {
	if hp.Link == "" {
		return false
	}
	target := hp.Link
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(hp.Path), target)
	}
	target = filepath.Clean(target)
	return pathtree.Within(target, "/usr") || pathtree.Within(target, "/proc")
}

// RootEntry is an entry of a sandbox's root directory that host.Prepare
// makes: a directory or an empty file (mount points, or a directory the
// sandbox needs), or a symlink.
type RootEntry struct {
	// Path is its path in the sandbox.
	Path string
	// Dir makes it a directory, Link a symlink to Link, neither an empty
	// file.
	Dir  bool
	Link string
}

// rootEntries are the entries of the root directory of a sandbox on the
// host host: /proc, /dev, /tmp, /etc and boxsh's directory; the symlinks
// of a merged /usr (bin -> usr/bin, ...) and of the /etc entries that are
// symlinks into /usr or /proc (etcSymlink); the mount points of the
// system directories and of the other /etc entries. The binds' mount
// points are left to the runtime.
func rootEntries(host HostFacts) []RootEntry {
	var es []RootEntry
	for _, p := range []string{"/proc", "/dev", "/tmp", "/etc", frame.BoxshDir} {
		es = append(es, RootEntry{Path: p, Dir: true})
	}
	for _, hp := range host.System {
		switch {
		case hp.Link != "":
			es = append(es, RootEntry{Path: hp.Path, Link: hp.Link})
		case hp.Dir:
			es = append(es, RootEntry{Path: hp.Path, Dir: true})
		}
	}
	for _, hp := range host.Etc {
		if etcSymlink(hp) {
			es = append(es, RootEntry{Path: hp.Path, Link: hp.Link})
		} else {
			es = append(es, RootEntry{Path: hp.Path, Dir: hp.Dir})
		}
	}
	return es
}

// SpecConfig is what BuildSpec makes a spec of.
type SpecConfig struct {
	// Sandbox is the policy. Try must have been turned into its cow bind
	// by the caller (it needs a new directory).
	Sandbox policy.Sandbox
	// Limits are the resource limits of the sandbox's processes.
	Limits Limits
	// Args, Env and Terminal describe the process; Env gets a PATH when
	// it has none. See initArgs for boxsh-init's arguments.
	Args     []string
	Env      []string
	Terminal bool
	// Cwd is the caller's working directory on the host; the process
	// starts in the same directory inside when the sandbox shows it (see
	// SandboxCwd), else in /.
	Cwd string
	// UID and GID are the caller's ids on the host, root inside.
	UID, GID uint32
	// Groups are supplementary groups of the caller mapped as well, each
	// to the same gid inside: files of those groups keep their group in
	// the sandbox, and a cow bind can copy them up.
	Groups []uint32
	// Rootfs is the root directory: absolute, or relative to the bundle.
	Rootfs string
	// InitPath is the host's boxsh-init, bound at frame.InitMountPath; empty
	// for none.
	InitPath string
	// ForkServer is the host's fork-server library, bound at
	// frame.ForkServerMountPath; empty for none.
	ForkServer string
	// Hostname is the sandbox's host name (default defaultHostname).
	Hostname string
	// Host are the host facts (see host.Gather).
	Host HostFacts
	// Protect are host paths that wr binds expose but that stay
	// read-only, bound over themselves after the binds (see
	// host.GatherProtection). Missing ones get an empty read-only file or
	// directory from Placeholders, or are left out when it is empty.
	Protect []HostPath
	// Placeholders is a host directory with an empty file "file" and an
	// empty directory "dir", and an unreadable empty file "denied" and
	// directory "denied-dir" (see host.Prepare).
	Placeholders string
	// Rules are the policy's file rules, resolved (see host.Gather).
	Rules FileRules
	// Seccomp is the seccomp filter (default DefaultSeccomp()).
	Seccomp *specs.LinuxSeccomp
	// Version goes into the VersionAnnotation.
	Version string
}

// Limits are the resource limits a sandbox's spec sets as rlimits, which
// every process of the sandbox inherits (a rootless runtime has no cgroup
// to use). The spec carries every rlimit the sandbox's first process gets,
// so that another runtime gives the same (it would give its own else).
// Memory and Pids are for a shell or command run with --exec; with --rpc,
// boxsh-init applies them to each command it starts instead
// (frame.InitOptions), so that they do not bind boxsh-init itself: a fork bomb
// that takes every process slot must not keep it from making a thread.
type Limits struct {
	// NoFile is the limit of open files (RLIMIT_NOFILE) of every process,
	// boxsh-init included: HostFacts.NoFile. nil leaves it to the
	// runtime.
	NoFile *Rlimit
	// Memory caps each process's data (heap and private mappings,
	// RLIMIT_DATA), in bytes; 0 is no limit.
	Memory int64
	// Pids caps the processes of the sandbox (RLIMIT_NPROC, which the
	// kernel counts per user namespace, so only the sandbox's own count:
	// boxsh-init and the warm shells of its workers among them); 0 is no
	// limit.
	Pids int
	// Cgroup, when the runtime can have a cgroup (root, or a delegated
	// cgroup v2 subtree), caps the whole sandbox too: Cgroup.Memory bytes
	// (memory.max), Cgroup.Pids tasks (pids.max) and Cgroup.CPUs cores
	// (cpu.max).
	Cgroup *CgroupLimits
}

// CgroupLimits are the limits of a sandbox's cgroup (see Limits.Cgroup).
type CgroupLimits struct {
	Memory int64
	Pids   int
	CPUs   float64
}

// cpuPeriod is the period of the sandbox's CPU quota, in microseconds.
const cpuPeriod = 100_000

// resources are the cgroup limits of l, or nil.
func (l Limits) resources() *specs.LinuxResources {
	c := l.Cgroup
	if c == nil || c.Memory <= 0 && c.Pids <= 0 && c.CPUs <= 0 {
		return nil
	}
	r := &specs.LinuxResources{}
	if c.Memory > 0 {
		m := c.Memory
		r.Memory = &specs.LinuxMemory{Limit: &m}
	}
	if c.Pids > 0 {
		pids := int64(c.Pids)
		r.Pids = &specs.LinuxPids{Limit: &pids}
	}
	if c.CPUs > 0 {
		quota, period := int64(c.CPUs*cpuPeriod), uint64(cpuPeriod)
		r.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	return r
}

// limitsOf are the limits of the policy p that a sandbox's spec sets: all
// of them for a shell or command, none for boxsh-init (see Limits).
func limitsOf(p policy.Policy, forInit bool) Limits {
	var l Limits
	if !forInit {
		l = Limits{Memory: p.Memory.Value, Pids: p.Pids.Value}
	}
	if p.Memory.Set() || p.Pids.Set() || p.CPUs.Set() {
		l.Cgroup = &CgroupLimits{Memory: p.Memory.Value, Pids: p.Pids.Value, CPUs: p.CPUs.Value}
	}
	return l
}

// rlimits are the spec's process.rlimits of l; host.StartContainer applies
// exactly these.
func (l Limits) rlimits() []specs.POSIXRlimit {
	var rs []specs.POSIXRlimit
	if l.NoFile != nil {
		rs = append(rs, specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: l.NoFile.Hard, Soft: l.NoFile.Soft})
	}
	if l.Memory > 0 {
		rs = append(rs, specs.POSIXRlimit{Type: "RLIMIT_DATA", Hard: uint64(l.Memory), Soft: uint64(l.Memory)})
	}
	if l.Pids > 0 {
		rs = append(rs, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: uint64(l.Pids), Soft: uint64(l.Pids)})
	}
	return rs
}

// initArgs are the arguments of boxsh-init inside the sandbox.
func initArgs(o frame.InitOptions) []string {
	return append([]string{frame.InitMountPath}, o.Args()...)
}

// Mount options.
var (
	// bindRO and bindRW are the options of recursive binds. "rro" makes
	// the mounts under a read-only bind read-only too. nosuid and nodev
	// change nothing a process in the sandbox could use (no new
	// privileges; devices of an unmapped owner), and keep those flags
	// when the runtime remounts a bind of a host mount that has them
	// (a user namespace must keep them).
	bindRO = []string{"rbind", "ro", "rro", "nosuid", "nodev"}
	bindRW = []string{"rbind", "rw", "nosuid", "nodev"}
)

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

// reservedDsts are destinations a --bind may not take (nor go under, for
// /proc and /.boxsh): the root, and what the runtime or boxsh manage.
var reservedDsts = []string{"/", "/dev", "/proc", frame.BoxshDir}

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

// privateHome is where the sandbox sb gets a tmpfs of its own: its home
// directory, when no bind shows it or a directory above it (binds inside
// it are mounted on the tmpfs) and it is not a system directory; "" for
// none.
func privateHome(sb policy.Sandbox, host HostFacts) string {
	home := sb.Home
	if home == "" || home == "/" || !filepath.IsAbs(home) || filepath.Clean(home) != home {
		return ""
	}
	for _, b := range sb.Binds {
		if pathtree.Within(home, b.Dst) {
			return ""
		}
	}
	for _, r := range reservedDsts {
		if r != "/" && pathtree.Within(home, r) {
			return ""
		}
	}
	for _, hps := range [][]HostPath{host.System, host.Etc, host.Whole} {
		for _, hp := range hps {
			if pathtree.Within(home, hp.Path) {
				return ""
			}
		}
	}
	return home
}

// cacheDir is where the --cache directory appears in a sandbox whose home
// is home: the home's .cache, the default XDG_CACHE_HOME.
func cacheDir(home string) string { return filepath.Join(home, ".cache") }

// CacheEnv adds to env the variables that put the tools' caches in the
// --cache directory of a sandbox whose home is home (see cacheDir), those
// env does not set already: XDG_CACHE_HOME, Go's build cache (GOCACHE)
// and module cache (GOMODCACHE), npm's cache (npm_config_cache). pip,
// yarn and others use XDG_CACHE_HOME.
func CacheEnv(env []string, home string) []string {
	dir := cacheDir(home)
	for _, kv := range []string{
		"XDG_CACHE_HOME=" + dir,
		"GOCACHE=" + filepath.Join(dir, "go-build"),
		"GOMODCACHE=" + filepath.Join(dir, "go-mod"),
		"npm_config_cache=" + filepath.Join(dir, "npm"),
	} {
		name, _, _ := strings.Cut(kv, "=")
		// npm reads its variables in either case.
		if !slices.ContainsFunc(env, func(e string) bool {
			n, _, _ := strings.Cut(e, "=")
			return n == name || strings.HasPrefix(name, "npm_") && strings.EqualFold(n, name)
		}) {
			env = append(env, kv)
		}
	}
	return env
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

// systemMounts are the mounts every sandbox has, before the binds.
func systemMounts(host HostFacts, initPath, forkServer string) []specs.Mount {
	ms := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		// No gid= option: a rootless sandbox has no tty group to give.
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
	}
	for _, hp := range host.System {
		if hp.Link == "" && hp.Dir {
			ms = append(ms, specs.Mount{Destination: hp.Path, Type: "bind", Source: hp.Path, Options: slices.Clone(bindRO)})
		}
	}
	for _, hp := range host.Whole {
		ms = append(ms, specs.Mount{Destination: hp.Path, Type: "bind", Source: hp.Path, Options: slices.Clone(bindRO)})
	}
	for _, hp := range host.Etc {
		if etcSymlink(hp) {
			continue
		}
		ms = append(ms, specs.Mount{Destination: hp.Path, Type: "bind", Source: hp.Path, Options: roBind(hp.Dir)})
	}
	ms = append(ms, specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}})
	if initPath != "" {
		ms = append(ms, specs.Mount{Destination: frame.InitMountPath, Type: "bind", Source: initPath, Options: []string{"bind", "ro", "nosuid", "nodev"}})
		if forkServer != "" {
			ms = append(ms, specs.Mount{Destination: frame.ForkServerMountPath, Type: "bind", Source: forkServer, Options: []string{"bind", "ro", "nosuid", "nodev"}})
		}
	}
	return ms
}

// bindMount is the mount of a --bind.
func bindMount(b policy.Bind) specs.Mount {
	switch b.Mode {
	case policy.ReadOnly:
		return specs.Mount{Destination: b.Dst, Type: "bind", Source: b.Src, Options: slices.Clone(bindRO)}
	case policy.ReadWrite:
		return specs.Mount{Destination: b.Dst, Type: "bind", Source: b.Src, Options: slices.Clone(bindRW)}
	}
	upper, work := CowDirs(b)
	return specs.Mount{
		Destination: b.Dst,
		Type:        "overlay",
		Source:      "overlay",
		Options: []string{
			"lowerdir=" + overlayEscape(b.Src),
			"upperdir=" + overlayEscape(upper),
			"workdir=" + overlayEscape(work),
			// Whiteouts and opaque directories as user.overlay.*
			// attributes, which a user namespace may set.
			"userxattr",
			// As boxsh v3: no inode numbers composed from the layers,
			// whose overflow fails copy-up on some file systems.
			"xino=off",
			"nosuid",
			"nodev",
		},
	}
}

// checkInPlace refuses, with --in-place, a cow bind whose SRC is or holds
// what the runtime or boxsh manage (the root, /dev, /proc, /.boxsh): its
// view there would cover them.
func checkInPlace(sb policy.Sandbox) error {
	if !sb.InPlace {
		return nil
	}
	for _, b := range sb.Binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		for _, r := range reservedDsts {
			if pathtree.Within(r, b.Src) || (r != "/" && pathtree.Within(b.Src, r)) {
				return policy.BindErrorf("--bind %s with --in-place: its view at %s would cover %s", b, b.Src, r)
			}
		}
	}
	return nil
}

// inPlaceViews are the mounts that show each cow bind's merged view at
// its SRC too (policy.Sandbox.InPlace): binds of the overlay mounted at
// DST inside rootfs, after every mount of the tree, so that the view
// covers what shows SRC and holds what is mounted under DST.
func inPlaceViews(sb policy.Sandbox, rootfs string) []specs.Mount {
	if !sb.InPlace {
		return nil
	}
	var views []specs.Mount
	for _, b := range sb.Binds {
		if b.Mode == policy.CopyOnWrite {
			views = append(views, specs.Mount{Destination: b.Src, Type: "bind", Source: filepath.Join(rootfs, b.Dst), Options: slices.Clone(bindRW)})
		}
	}
	slices.SortStableFunc(views, func(a, b specs.Mount) int { return pathtree.Depth(a.Destination) - pathtree.Depth(b.Destination) })
	return views
}

// overlayEscape escapes the characters that separate overlay options
// (",") and lower layers (":") in a path.
func overlayEscape(p string) string {
	var sb strings.Builder
	for _, r := range p {
		if r == '\\' || r == ',' || r == ':' {
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// CowDirs are the host directories of cow:SRC:DST, as in boxsh v3: DST
// itself is the upper layer, which receives the writes (and whiteouts for
// deletions), and the overlay's work directory is policy.CowWorkDir:
// <parent of DST>/.boxsh/<name of DST>, or .boxsh-UID in a directory
// other users may write to (/tmp). Inside the sandbox the merged view of
// SRC and DST is mounted at DST.
func CowDirs(b policy.Bind) (upper, work string) {
	return b.Dst, policy.CowWorkDir(b.Dst)
}

// orderBinds checks the binds and puts each after the binds that contain
// its destination (stable: flag order among the others).
func orderBinds(binds []policy.Bind) ([]policy.Bind, error) {
	seen := map[string]policy.Bind{}
	for _, b := range binds {
		switch b.Mode {
		case policy.ReadOnly, policy.ReadWrite, policy.CopyOnWrite:
		default:
			return nil, policy.BindErrorf("--bind %s: unknown mode %q", b, b.Mode)
		}
		for _, p := range []string{b.Src, b.Dst} {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				return nil, policy.BindErrorf("--bind %s: %q is not a clean absolute path", b, p)
			}
		}
		for _, r := range reservedDsts {
			if b.Dst == r || (r != "/" && r != "/dev" && pathtree.Within(b.Dst, r)) {
				return nil, policy.BindErrorf("--bind %s: cannot bind over %s", b, r)
			}
		}
		if b.Mode == policy.CopyOnWrite {
			if pathtree.Within(b.Dst, b.Src) || pathtree.Within(b.Src, b.Dst) {
				return nil, policy.BindErrorf("--bind %s: SRC and DST must not contain one another", b)
			}
			if _, work := CowDirs(b); pathtree.Within(work, b.Src) {
				return nil, policy.BindErrorf("--bind %s: the work directory %s must not be in SRC", b, work)
			}
		}
		if prev, dup := seen[b.Dst]; dup {
			return nil, policy.BindErrorf("--bind %s: %s is already bound by --bind %s", b, b.Dst, prev)
		}
		seen[b.Dst] = b
	}
	out := slices.Clone(binds)
	slices.SortStableFunc(out, func(a, b policy.Bind) int { return pathtree.Depth(a.Dst) - pathtree.Depth(b.Dst) })
	return out, nil
}

// BindShowing is the most specific bind of sb that shows the sandbox path
// p (the last of equal ones, as they are mounted in order), or nil.
func BindShowing(sb policy.Sandbox, p string) *policy.Bind {
	var via *policy.Bind
	for i, b := range sb.Binds {
		if pathtree.Within(p, b.Dst) && (via == nil || len(b.Dst) >= len(via.Dst)) {
			via = &sb.Binds[i]
		}
	}
	return via
}

// SandboxCwd is where a process started from the host directory cwd
// starts inside the sandbox: in a cow bind's SRC, the same place under its
// DST (the first such bind in flag order), so that relative writes go
// through the overlay, or cwd itself where the view is in place too
// (policy.Sandbox.InPlace); else cwd itself when the sandbox shows it (it is in
// a bound directory, or is a directory that the mounts need, such as a
// parent of a bind), or when it is in /tmp: the sandbox's /tmp is its own,
// and runc makes the directory there, empty, so that the process keeps its
// path (as boxsh v4 does) without seeing anything of the host's; else "/"
// (the v3 and v4 suites require that no other unbound directory appear
// inside, even empty).
func SandboxCwd(sb policy.Sandbox, host HostFacts, cwd string) string {
	if !filepath.IsAbs(cwd) {
		return "/"
	}
	cwd = filepath.Clean(cwd)
	for _, b := range sb.Binds {
		if b.Mode == policy.CopyOnWrite && pathtree.Within(cwd, b.Src) {
			if sb.InPlace {
				return cwd // the view at SRC
			}
			return filepath.Join(b.Dst, strings.TrimPrefix(cwd, b.Src))
		}
	}
	// Directories whose host content the sandbox shows.
	var shown []string
	// Mount points: they and their parents exist inside.
	points := []string{"/proc", "/dev/pts", "/dev/shm", "/dev/mqueue", "/tmp", frame.InitMountPath}
	for _, hp := range host.System {
		points = append(points, hp.Path)
		if hp.Link == "" && hp.Dir {
			shown = append(shown, hp.Path)
		}
	}
	if sb.HostSystem {
		for _, hp := range host.Whole {
			points = append(points, hp.Path)
			shown = append(shown, hp.Path)
		}
	} else {
		for _, hp := range host.Etc {
			points = append(points, hp.Path)
			if hp.Dir && !etcSymlink(hp) {
				shown = append(shown, hp.Path)
			}
		}
	}
	for _, b := range sb.Binds {
		shown = append(shown, b.Dst)
		points = append(points, b.Dst)
	}
	for _, d := range shown {
		if pathtree.Within(cwd, d) {
			return cwd
		}
	}
	for _, p := range points {
		if pathtree.Within(p, cwd) {
			return cwd
		}
	}
	if pathtree.Within(cwd, "/tmp") {
		return cwd
	}
	return "/"
}

// roBind are the options of a read-only bind: of a file, or recursively
// of a directory.
func roBind(dir bool) []string {
	if dir {
		return slices.Clone(bindRO)
	}
	return []string{"bind", "ro", "nosuid", "nodev"}
}

// checkCleanAbs tells, as an error, that the path p of a kind of mount is
// not a clean absolute path.
func checkCleanAbs(kind, p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("spec: %s path %q is not a clean absolute path", kind, p)
	}
	return nil
}

// DeniedName and DeniedDirName are the names in SpecConfig.Placeholders
// of the empty file and directory, mode 0, bound over the files and
// directories that denyRead rules cover.
const (
	DeniedName    = "denied"
	DeniedDirName = "denied-dir"
)

// fileRuleMounts are the mounts of the file rules, after every bind (they
// cover paths inside them), outermost first: denyWrite paths bound
// read-only onto themselves; denyRead files and directories covered by
// the empty placeholders of mode 0. Without placeholders (a printed
// spec), files are covered by /dev/null (empty and readable: the spec's
// user should run it with placeholders, as boxsh spec --bundle does) and
// directories by an empty read-only tmpfs of mode 0 (which runc before
// 1.1.8, Debian 12's, gives the mode of the directory it covers instead:
// opencontainers/runc#3911). Root in the sandbox has no CAP_DAC_OVERRIDE,
// so the placeholders answer "Permission denied", and no cover can be
// changed (read-only, and mount is refused).
func fileRuleMounts(fr FileRules, placeholders string) ([]specs.Mount, error) {
	var ms []specs.Mount
	for _, rp := range fr.DenyWrite {
		if err := checkCleanAbs("denyWrite", rp.Path); err != nil {
			return nil, err
		}
		ms = append(ms, specs.Mount{Destination: rp.Path, Type: "bind", Source: rp.Path, Options: roBind(rp.Dir)})
	}
	for _, rp := range fr.DenyRead {
		if err := checkCleanAbs("denyRead", rp.Path); err != nil {
			return nil, err
		}
		switch {
		case rp.Dir && placeholders != "":
			ms = append(ms, specs.Mount{Destination: rp.Path, Type: "bind", Source: filepath.Join(placeholders, DeniedDirName), Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
		case rp.Dir:
			ms = append(ms, specs.Mount{Destination: rp.Path, Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "nosuid", "nodev", "noexec", "mode=000", "size=4k"}})
		case placeholders != "":
			ms = append(ms, specs.Mount{Destination: rp.Path, Type: "bind", Source: filepath.Join(placeholders, DeniedName), Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
		default:
			ms = append(ms, specs.Mount{Destination: rp.Path, Type: "bind", Source: "/dev/null", Options: []string{"bind", "ro", "nosuid", "noexec"}})
		}
	}
	slices.SortStableFunc(ms, func(a, b specs.Mount) int { return pathtree.Depth(a.Destination) - pathtree.Depth(b.Destination) })
	return ms, nil
}

// placeholderName is the name in SpecConfig.Placeholders of the file or
// directory bound over a missing protected path.
func placeholderName(hp HostPath) string {
	if hp.Dir {
		return "dir"
	}
	if pf, ok := placeholderFiles[filepath.Base(hp.Path)]; ok && hp.Content == pf.content {
		return pf.file
	}
	return "file"
}

// PlaceholderExcludes is the content of the sandbox's git excludes file
// (frame.GitExcludesPath): a pattern for each missing protected file of
// protect outside a git directory, whose placeholder is a regular file,
// so that the sandbox's git neither shows nor commits it. "" when there
// is none.
func PlaceholderExcludes(protect []HostPath) string {
	var names []string
	for _, hp := range protect {
		if hp.Missing && !hp.Dir && !strings.Contains(hp.Path, "/.git/") && !slices.Contains(names, filepath.Base(hp.Path)) {
			names = append(names, filepath.Base(hp.Path))
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return "# boxsh: the placeholders of missing protected files\n" + strings.Join(names, "\n") + "\n"
}

// gitExcludesEnv adds to env the git configuration that makes git read
// frame.GitExcludesPath as its excludes file, after any GIT_CONFIG_COUNT
// entries env has. The user's own core.excludesFile is not read then.
func gitExcludesEnv(env []string) []string {
	n := 0
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			n, _ = strconv.Atoi(v)
			env = slices.Delete(env, i, i+1)
			break
		}
	}
	return append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+1),
		fmt.Sprintf("GIT_CONFIG_KEY_%d=core.excludesFile", n), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, frame.GitExcludesPath))
}

// placeholderFiles are, by the protected file's name, the placeholders
// that hold what their readers take for nothing, where an empty file
// would be an error to them, with their names in SpecConfig.Placeholders:
//   - git reads a commondir of "." as the git directory itself (no
//     redirection);
//   - MCP clients (Claude Code, Cursor) read an .mcp.json of no servers.
var placeholderFiles = map[string]struct{ file, content string }{
	"commondir": {"commondir", "."},
	".mcp.json": {"mcp.json", "{\"mcpServers\": {}}\n"},
}

// PlaceholderContent is what the placeholder of the missing protected
// file named name holds: "" (an empty file) but for placeholderFiles.
func PlaceholderContent(name string) string { return placeholderFiles[name].content }

// PlaceholderFiles are the names in SpecConfig.Placeholders of the
// placeholders with content, and their content.
func PlaceholderFiles() map[string]string {
	out := map[string]string{}
	for _, pf := range placeholderFiles {
		out[pf.file] = pf.content
	}
	return out
}
