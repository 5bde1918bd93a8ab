package darwin

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
)

// The network modes of ProfileConfig.Network.
const (
	// NetworkDisabled denies the network; only Unix-domain sockets inside
	// the writable bound directories (and socket pairs) work.
	NetworkDisabled = "disabled"
	// NetworkAllowAll allows the whole network.
	NetworkAllowAll = "allow_all"
	// NetworkAllowlist allows only the front's network proxy, on the
	// loopback at ProfileConfig.ProxyPort (and the Unix-domain sockets of
	// NetworkDisabled).
	NetworkAllowlist = "allowlist"
)

// ProfileConfig is everything the profile depends on; Generate reads
// nothing from the host. Paths must be absolute; the front resolves
// symbolic links first (the sandbox matches resolved paths), except the
// top-level /etc, /tmp and /var, which Generate rewrites to /private.
type ProfileConfig struct {
	// Sandbox is the sandbox of the command line, with --try already
	// turned into binds (see host.ResolveTry in runtime/host).
	Sandbox policy.Sandbox
	// Policy is the merged policy; its file rules shape the profile.
	Policy policy.Policy
	// Home is the home directory, for "~/" rules (optional when no rule
	// uses it).
	Home string
	// Cwd is the working directory, for project-relative rules (optional
	// when no rule uses it).
	Cwd string
	// TmpDir is the per-user temporary directory ($TMPDIR on macOS,
	// /private/var/folders/...), readable. Like /private/tmp, it is shared
	// with the host's programs and stays read-only unless a bind makes it
	// writable. Empty leaves only /private/tmp.
	TmpDir string
	// PrivateTmp is the sandbox's own temporary directory, writable. The
	// front makes it inside TmpDir for each sandbox, names it in TMPDIR
	// and removes it at the end. So mktemp, here-documents and compilers
	// work while the shared directories stay read-only. Empty for none.
	PrivateTmp string
	// HardDenied are the paths no setting makes writable. They are names
	// or relative paths matched at any depth inside the bound directories
	// (".bashrc", ".git/config"), and directories when they end in "/"
	// (".git/hooks/": the directory and everything below it).
	HardDenied []string
	// Protected are host paths that stay read-only and cannot be created
	// either. They are the git control files of the repositories that
	// exist in the writable binds when the sandbox starts (see
	// host.GatherProtection). HardDenied leaves them out so that git init
	// and git clone work.
	Protected []Protected
	// Network is NetworkDisabled, NetworkAllowAll or NetworkAllowlist;
	// empty means NetworkDisabled with Sandbox.NewNetNS, else
	// NetworkAllowAll.
	Network string
	// ProxyPort is the TCP port of the front's proxy on 127.0.0.1, the
	// only address a NetworkAllowlist sandbox reaches. It is 0 for a
	// profile that is printed, not run: boxsh spec starts no proxy.
	ProxyPort int
}

// Protected is a host path the profile keeps read-only (and uncreated).
type Protected struct {
	// Path is absolute, its symbolic links resolved.
	Path string
	// Dir covers the path and everything below it.
	Dir bool
	// Reason is why, for the profile's comment.
	Reason string
}

// Generate returns the SBPL profile text for cfg, the same text for the
// same configuration.
func Generate(cfg ProfileConfig) (string, error) {
	g, err := load(cfg)
	if err != nil {
		return "", fmt.Errorf("sandbox profile: %w", err)
	}
	out, err := g.write()
	if err != nil {
		return "", fmt.Errorf("sandbox profile: %w", err)
	}
	return out, nil
}

// areaKind is how a bound directory may be used.
type areaKind int

const (
	// areaRead is readable (the source of a cow bind).
	areaRead areaKind = iota
	// areaReadOnly is readable, and stays read-only inside a writable
	// directory (an ro bind).
	areaReadOnly
	// areaReadWrite is readable and writable.
	areaReadWrite
)

// area is a directory the sandbox may use.
type area struct {
	path   string
	kind   areaKind
	labels []string
	// user is a directory of the user's (a bind or allowWrite), where the
	// name patterns apply; not the temporary directories.
	user bool
}

// labeled is a rule with the comment that names it.
type labeled struct {
	m     matcher
	label string
}

// gen is a checked configuration.
type gen struct {
	network       string
	proxyPort     int
	hostSystem    bool
	cowSources    []string // never writable, even inside a writable area
	areas         []*area
	writeRegexes  []labeled // allowWrite rules with patterns in their path
	writeFloating []labeled // allowWrite name patterns
	denyRead      []labeled
	allowRead     []labeled
	denyWrite     []labeled
	hardDenied    []labeled
}

func load(cfg ProfileConfig) (*gen, error) {
	sb := cfg.Sandbox
	if !sb.Enabled {
		return nil, errors.New("the sandbox is not enabled")
	}
	if sb.Try {
		return nil, errors.New("--try must be turned into binds first")
	}
	g := &gen{hostSystem: sb.HostSystem}
	switch cfg.Network {
	case "":
		g.network = NetworkAllowAll
		if sb.NewNetNS {
			g.network = NetworkDisabled
		}
	case NetworkDisabled:
		g.network = cfg.Network
	case NetworkAllowlist:
		if cfg.ProxyPort < 0 || cfg.ProxyPort > 65535 {
			return nil, fmt.Errorf("network allowlist: bad proxy port %d", cfg.ProxyPort)
		}
		g.network, g.proxyPort = cfg.Network, cfg.ProxyPort
	case NetworkAllowAll:
		if sb.NewNetNS {
			return nil, errors.New("network allow_all contradicts --new-net-ns")
		}
		g.network = cfg.Network
	default:
		return nil, fmt.Errorf("unknown network mode %q (expected %q, %q or %q)", cfg.Network, NetworkDisabled, NetworkAllowAll, NetworkAllowlist)
	}

	var home, cwd string
	var err error
	if cfg.Home != "" {
		if home, err = cleanAbs("home directory", cfg.Home); err != nil {
			return nil, err
		}
	}
	if cfg.Cwd != "" {
		if cwd, err = cleanAbs("working directory", cfg.Cwd); err != nil {
			return nil, err
		}
	}
	if cfg.TmpDir != "" {
		tmp, err := cleanAbs("temporary directory", cfg.TmpDir)
		if err != nil {
			return nil, err
		}
		g.addArea(tmp, areaRead, "temporary directory ($TMPDIR): shared with the host's programs, read-only unless bound", false)
	}
	// Read-only, as the original keeps /tmp (sandbox_darwin.cpp:224-228
	// allow reading /private and /tmp, and no write there): the host's
	// programs share it (sockets of ssh-agent and tmux, scripts that
	// others run), so a command could plant files in it.
	g.addArea("/private/tmp", areaRead, "/tmp: shared with the host's programs, read-only unless bound", false)
	if cfg.PrivateTmp != "" {
		tmp, err := cleanAbs("private temporary directory", cfg.PrivateTmp)
		if err != nil {
			return nil, err
		}
		g.addArea(tmp, areaReadWrite, "the sandbox's own temporary directory (TMPDIR): made at start, removed at the end", false)
	}

	for _, b := range sb.Binds {
		if err := g.addBind(b); err != nil {
			return nil, err
		}
	}

	rules := func(kind string, rs []policy.Rule) ([]labeled, error) {
		var out []labeled
		seen := map[string]bool{}
		for _, r := range rs {
			if seen[r.Value] {
				continue
			}
			seen[r.Value] = true
			m, err := parseRule(r.Value, home, cwd)
			if err != nil {
				return nil, fmt.Errorf("%s %w", kind, err)
			}
			label := kind + " " + r.Value
			if r.Source != "" {
				label += " (from " + commentText(string(r.Source)) + ")"
			}
			out = append(out, labeled{m, label})
		}
		slices.SortFunc(out, func(a, b labeled) int { return cmp.Compare(a.label, b.label) })
		return out, nil
	}
	pol := cfg.Policy
	if g.denyRead, err = rules("denyRead", pol.DenyRead); err != nil {
		return nil, err
	}
	foldAll(g.denyRead)
	if g.allowRead, err = rules("allowRead", pol.AllowRead); err != nil {
		return nil, err
	}
	if g.denyWrite, err = rules("denyWrite", pol.DenyWrite); err != nil {
		return nil, err
	}
	foldAll(g.denyWrite)
	allowWrite, err := rules("allowWrite", pol.AllowWrite)
	if err != nil {
		return nil, err
	}
	for _, r := range allowWrite {
		switch {
		case r.m.isLiteral():
			g.addArea(r.m.path(), areaReadWrite, r.label, true)
		case r.m.anchored:
			g.writeRegexes = append(g.writeRegexes, r)
		default:
			g.writeFloating = append(g.writeFloating, r)
		}
	}

	hard := slices.Clone(cfg.HardDenied)
	slices.Sort(hard)
	for _, e := range slices.Compact(hard) {
		m, err := parseHardDenied(e, home)
		if err != nil {
			return nil, fmt.Errorf("hard-denied %w", err)
		}
		g.hardDenied = append(g.hardDenied, labeled{m.folded(), "hard-denied " + e})
	}
	var protected []labeled
	for _, p := range cfg.Protected {
		clean, err := cleanAbs("protected path", p.Path)
		if err != nil {
			return nil, err
		}
		label := "protected " + clean
		if p.Reason != "" {
			label += ": " + p.Reason
		}
		protected = append(protected, labeled{pathMatcher(clean, p.Dir).folded(), label})
	}
	slices.SortFunc(protected, func(a, b labeled) int { return cmp.Compare(a.label, b.label) })
	g.hardDenied = append(g.hardDenied, slices.CompactFunc(protected, func(a, b labeled) bool { return a.label == b.label })...)
	slices.Sort(g.cowSources)
	g.cowSources = slices.Compact(g.cowSources)

	// Outermost first, so that an inner bind's rule follows (and wins
	// over) the rule of the bind around it.
	slices.SortFunc(g.areas, func(a, b *area) int {
		return cmp.Or(cmp.Compare(pathtree.Depth(a.path), pathtree.Depth(b.path)), cmp.Compare(a.path, b.path), cmp.Compare(a.kind, b.kind))
	})
	for _, a := range g.areas {
		slices.Sort(a.labels)
	}
	return g, nil
}

// foldAll makes the matchers of rules match either case (see
// matcher.fold).
func foldAll(rules []labeled) {
	for i := range rules {
		rules[i].m = rules[i].m.folded()
	}
}

// systemVolumes holds the mount points of the system's APFS volumes. The data
// volume under it is firmlinked at /Users, /Applications, /opt and the rest.
// So a path through it names the same files by another path, which no rule of
// the user's names.
const systemVolumes = "/System/Volumes"

// addBind adds the directories of a --bind.
func (g *gen) addBind(b policy.Bind) error {
	src, err := cleanAbs("--bind "+b.String()+": source", b.Src)
	if err != nil {
		return err
	}
	dst, err := cleanAbs("--bind "+b.String()+": destination", b.Dst)
	if err != nil {
		return err
	}
	for _, p := range []string{src, dst} {
		if pathtree.Within(strings.ToLower(p), strings.ToLower(systemVolumes)) {
			return fmt.Errorf("--bind %s: %s is inside %s, which the sandbox never reads: bind the same directory by its usual path (/Users/..., the firmlink)", b, p, systemVolumes)
		}
	}
	switch b.Mode {
	case policy.ReadOnly, policy.ReadWrite:
		if src != dst {
			return fmt.Errorf("--bind %s: the macOS sandbox cannot show %s at %s", b, b.Src, b.Dst)
		}
		kind := areaReadOnly
		if b.Mode == policy.ReadWrite {
			kind = areaReadWrite
		}
		g.addArea(dst, kind, b.String(), true)
	case policy.CopyOnWrite:
		// The front clones SRC into DST; the sandbox reads SRC and works
		// in DST.
		g.addArea(src, areaRead, b.String()+" (source)", true)
		g.cowSources = append(g.cowSources, src)
		g.addArea(dst, areaReadWrite, b.String()+" (destination)", true)
	default:
		return fmt.Errorf("--bind %s: unknown mode %q", b, b.Mode)
	}
	return nil
}

func (g *gen) addArea(p string, kind areaKind, label string, user bool) {
	for _, a := range g.areas {
		if a.path == p && a.kind == kind {
			a.labels = append(a.labels, label)
			a.user = a.user || user
			return
		}
	}
	g.areas = append(g.areas, &area{path: p, kind: kind, labels: []string{label}, user: user})
}

// outermost sorts paths and removes duplicates and the paths inside
// another.
func outermost(paths []string) []string {
	paths = slices.Clone(paths)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	return slices.DeleteFunc(paths, func(p string) bool {
		return slices.ContainsFunc(paths, func(r string) bool { return pathtree.Below(p, r) })
	})
}

// systemRoots are the system directories the sandbox may read, without
// those inside another.
func (g *gen) systemRoots() []string {
	paths := slices.Clone(systemReadPaths)
	if g.hostSystem {
		paths = append(paths, hostSystemReadPaths...)
	}
	return outermost(paths)
}

// writable are the directories the sandbox may write.
func (g *gen) writable() []string {
	var out []string
	for _, a := range g.areas {
		if a.kind == areaReadWrite {
			out = append(out, a.path)
		}
	}
	return out
}

// belowWritable tells whether p is strictly inside a writable directory.
func (g *gen) belowWritable(p string) bool {
	return slices.ContainsFunc(g.writable(), func(w string) bool { return pathtree.Below(p, w) })
}

// userScope are the filters of the user's directories (the binds and the
// allowWrite rules), where the name patterns apply.
func (g *gen) userScope() []expr {
	var paths []string
	for _, a := range g.areas {
		if a.user {
			paths = append(paths, a.path)
		}
	}
	out := subpaths(outermost(paths))
	for _, r := range g.writeRegexes {
		if !slices.ContainsFunc(paths, func(p string) bool { return pathtree.Within(r.m.staticPrefix(), p) }) {
			out = append(out, r.m.filter())
		}
	}
	return out
}

// readableRoots are the outermost directories the sandbox may read
// otherwise: the system's and the areas.
func (g *gen) readableRoots() []string {
	out := g.systemRoots()
	for _, a := range g.areas {
		out = append(out, a.path)
	}
	return outermost(out)
}

// builder collects the profile's lines and the first error.
type builder struct {
	b   strings.Builder
	err error
}

func (b *builder) line(s string) { b.b.WriteString(s + "\n") }

func (b *builder) comment(s string) { b.line("; " + commentText(s)) }

func (b *builder) blank() { b.line("") }

func (b *builder) rule(action string, ops []string, filters ...expr) {
	s, err := rule(action, ops, filters...)
	if err != nil {
		if b.err == nil {
			b.err = err
		}
		return
	}
	b.line(s)
}

func (b *builder) allow(ops []string, filters ...expr) { b.rule("allow", ops, filters...) }
func (b *builder) deny(ops []string, filters ...expr)  { b.rule("deny", ops, filters...) }

// quoted is quote for strings that are known to be valid; the error is
// recorded.
func (b *builder) quoted(s string) string {
	q, err := quote(s)
	if err != nil && b.err == nil {
		b.err = err
	}
	return q
}

var (
	opRead       = []string{"file-read*"}
	opReadWrite  = []string{"file-read*", "file-write*"}
	opWrite      = []string{"file-write*"}
	opUnlink     = []string{"file-write-unlink"}
	opReadUnlink = []string{"file-read*", "file-write-unlink"}
)

func literals(paths []string) []expr {
	out := make([]expr, len(paths))
	for i, p := range paths {
		out[i] = literal(p)
	}
	return out
}

func subpaths(paths []string) []expr {
	out := make([]expr, len(paths))
	for i, p := range paths {
		out[i] = subpath(p)
	}
	return out
}

func (g *gen) write() (string, error) {
	b := &builder{}
	b.line("(version 1)")
	b.comment("boxsh sandbox profile, generated by github.com/boxsh/boxsh/darwin.")
	b.comment("The last rule that matches an operation decides: the allows come first,")
	b.comment("then the policy's denies, the holes allowRead punches in them, and the")
	b.comment("write denies nothing lifts.")
	b.line("(deny default)")
	b.blank()

	g.writeBase(b)
	b.blank()
	g.writeNetwork(b)
	b.blank()
	g.writeSystemFiles(b)
	b.blank()
	g.writeAreas(b)
	g.writeDenyRead(b)
	g.writeAllowRead(b)
	g.writeDenies(b, "denyWrite: read-only even inside a writable directory", g.denyWrite)
	g.writeDenies(b, "hard-denied: never writable, nor creatable, whatever the settings say", g.hardDenied)
	if b.err != nil {
		return "", b.err
	}
	return strings.TrimRight(b.b.String(), "\n") + "\n", nil
}

func (g *gen) writeBase(b *builder) {
	b.comment("processes: run programs, signal and inspect the sandbox's own")
	b.line("(allow process-exec)")
	b.line("(allow process-fork)")
	b.line("(allow signal (target same-sandbox))")
	b.line("(allow process-info* (target same-sandbox))")
	b.blank()
	// Issue 29, item 3: an unrestricted sysctl-read lets a command read
	// every process's arguments and environment (kern.procargs2: API
	// keys) and list the processes (kern.proc.*). The list is the
	// original's (sandbox_darwin.cpp:290-333), without its
	// kern.proc.pid. prefix (another process's kinfo_proc).
	b.comment("sysctl: reading the names programs ask for (CPU, memory, system version), nothing about")
	b.comment("other processes (no kern.proc.*, no kern.procargs2); from the original, sandbox_darwin.cpp:290-333")
	var sysctls []expr
	for _, n := range sysctlNames {
		sysctls = append(sysctls, expr{head: "sysctl-name", arg: n})
	}
	for _, n := range sysctlPrefixes {
		sysctls = append(sysctls, expr{head: "sysctl-name-prefix", arg: n})
	}
	b.allow([]string{"sysctl-read"}, sysctls...)
	b.blank()
	b.comment("POSIX semaphores and shared memory (shm_open: Python's multiprocessing, PostgreSQL, Chromium);")
	b.comment("the original's sandbox_darwin.cpp:285-287")
	b.line("(allow ipc-posix-sem)")
	b.line("(allow ipc-posix-shm)")
	b.blank()
	b.comment("system services: user look-ups, logging, notifications, temporary directories, and the")
	b.comment("power-management queries of runtimes (fibjs, Node's os module): the original's")
	b.comment("sandbox_darwin.cpp:265 (com.apple.PowerManagement.control) and 279-283 (RootDomainUserClient)")
	var names []expr
	for _, n := range machServices {
		names = append(names, expr{head: "global-name", arg: n})
	}
	b.allow([]string{"mach-lookup"}, names...)
	b.allow([]string{"iokit-open"}, expr{head: "iokit-user-client-class", arg: "RootDomainUserClient"})
	b.blank()
	b.comment("devices")
	b.allow(opRead, literals(readDevices)...)
	b.allow(opReadWrite, append(literals(writeDevices), subpath("/dev/fd"))...)
	b.allow([]string{"file-ioctl"}, literals(ioctlDevices)...)
	b.comment("pseudo-terminals: new ones (openpty), and the ioctls of the one the shell was given;")
	b.comment("grantpt and unlockpt may still fail here, which boxsh's terminals tolerate (the original's")
	b.comment("sandbox_darwin.cpp:341-346; internal/toolhost/terminal's openPTY)")
	b.line("(allow pseudo-tty)")
	b.allow([]string{"file-read*", "file-write*", "file-ioctl"}, literal("/dev/ptmx"))
	b.allow(opReadWrite, requireAll(regex(ttyRegex), raw(`(extension "com.apple.sandbox.pty")`)))
	b.allow([]string{"file-ioctl"}, regex(ttyRegex))
}

func (g *gen) writeNetwork(b *builder) {
	if g.network == NetworkAllowAll {
		b.comment("network: allow_all (every address, and every Unix-domain socket the sandbox can reach)")
		b.line("(allow network*)")
		b.line("(allow system-socket)")
		var names []expr
		for _, n := range networkMachServices {
			names = append(names, expr{head: "global-name", arg: n})
		}
		b.allow([]string{"mach-lookup"}, names...)
		b.allow(opRead, literal(resolvConf))
		return
	}
	if g.network == NetworkAllowlist {
		b.comment("network: allowlist; only the front's proxy on the loopback (HTTP_PROXY, HTTPS_PROXY and")
		b.comment("ALL_PROXY name it), which decides on each destination by its name (issue 29, item 8).")
		b.comment("The loopback is the host's on macOS, not the sandbox's own as on Linux: no other port of")
		b.comment("it, or the host's local services would be reachable. Names resolve in the proxy: no DNS.")
		b.comment("Certificate trust (TLS verification goes through trustd, also for Go programs) as for allow_all.")
		b.comment("The port is chosen when the sandbox starts (boxsh spec shows 0).")
	} else {
		b.comment("network: disabled; Unix-domain sockets only inside the writable bound directories")
	}
	b.comment("(not the temporary directories, where the host's own live: ssh-agent, tmux, editors)")
	b.line("(deny network*)")
	b.line("(allow system-socket (socket-domain AF_UNIX))")
	var local, remote []expr
	for _, a := range g.areas {
		if a.kind == areaReadWrite && a.user {
			q := b.quoted(a.path)
			local = append(local, raw("(local unix-socket (subpath "+q+"))"))
			remote = append(remote, raw("(remote unix-socket (subpath "+q+"))"))
		}
	}
	if len(local) > 0 {
		b.allow([]string{"network-bind", "network-inbound"}, local...)
		b.allow([]string{"network-outbound"}, remote...)
	}
	if g.network == NetworkAllowlist {
		b.allow([]string{"network-outbound"}, raw(fmt.Sprintf(`(remote ip "localhost:%d")`, g.proxyPort)))
		var names []expr
		for _, n := range trustMachServices {
			names = append(names, expr{head: "global-name", arg: n})
		}
		b.allow([]string{"mach-lookup"}, names...)
	}
}

func (g *gen) writeSystemFiles(b *builder) {
	roots := g.systemRoots()
	// Issue 29, item 1: without reading "/" itself every dynamically
	// linked program may abort before main on macOS 26 (public reports:
	// ai-jail #77, mise #12263); the original's sandbox_darwin.cpp:212-215.
	b.comment("the root directory itself (its entries, not below): dyld and realpath read it; without it")
	b.comment("programs abort before main on macOS 26 (sandbox_darwin.cpp:215; ai-jail #77, mise #12263)")
	b.allow(opRead, literal("/"))
	b.comment("system files, read-only (/usr covers /usr/local); /etc, /tmp and /var are links into /private;")
	b.comment("see system.go for why each is here")
	b.allow(opRead, append(subpaths(roots), literals(systemLinks)...)...)
	// Issue 29, item 2: /System/Volumes/Data is the data volume, which
	// /Users, /Applications, /opt, /usr/local and the rest are firmlinks
	// into: through it every file of the user is readable by a path that
	// no bind, denyRead or protected rule names. The original's
	// sandbox_darwin.cpp:237-249. The sandbox sees the paths programs
	// use, /Users/u/proj for a bind of it (firmlinks are not symbolic
	// links: realpath keeps /Users), so the binds and the user's rules,
	// which name such paths, still apply; a bind inside /System/Volumes is
	// refused (see addBind). Folded: /system/volumes is the same
	// directory.
	b.comment("/System/Volumes holds the data volume that /Users, /Applications and /opt are firmlinked")
	b.comment("from: reading through it would go around every bind and deny (sandbox_darwin.cpp:237-249)")
	b.deny(opRead, pathMatcher(systemVolumes, true).folded().filter())

	// The directories above everything readable: their attributes only,
	// so that realpath and getcwd work.
	readable := g.readableRoots()
	var above []string
	add := func(p string) {
		for d := path.Dir(p); ; d = path.Dir(d) {
			if !slices.ContainsFunc(readable, func(r string) bool { return pathtree.Within(d, r) }) {
				above = append(above, d)
			}
			if d == "/" {
				return
			}
		}
	}
	for _, p := range readable {
		add(p)
	}
	for _, r := range g.writeRegexes {
		add(r.m.staticPrefix() + "/*") // the prefix itself and above
	}
	for _, p := range append(append(slices.Clone(readDevices), writeDevices...), "/dev/fd") {
		add(p)
	}
	above = slices.DeleteFunc(above, func(p string) bool { return p == "/" }) // readable above
	slices.Sort(above)
	b.comment("the directories above those the sandbox may read: attributes only (realpath, getcwd)")
	b.allow([]string{"file-read-metadata"}, literals(slices.Compact(above))...)
}

func (g *gen) writeAreas(b *builder) {
	b.comment("the bound and writable directories, outermost first: an ro bind inside a writable")
	b.comment("directory stays read-only")
	b.blank()
	for _, a := range g.areas {
		for _, l := range a.labels {
			b.comment(l)
		}
		switch a.kind {
		case areaRead:
			b.allow(opRead, subpath(a.path))
		case areaReadOnly:
			b.allow(opRead, subpath(a.path))
			if g.belowWritable(a.path) {
				b.deny(opWrite, pathMatcher(a.path, true).folded().filter())
			}
		case areaReadWrite:
			b.allow(opReadWrite, subpath(a.path))
		}
		b.blank()
	}
	for _, r := range g.writeRegexes {
		b.comment(r.label)
		b.allow(opReadWrite, r.m.filter())
		b.blank()
	}
	if len(g.writeFloating) > 0 {
		b.comment("allowWrite name patterns, at any depth inside the bound directories")
		g.scoped(b, "allow", opReadWrite, g.writeFloating)
	}
	g.writeCowSources(b)
}

// writeCowSources denies writing the sources of the cow binds, after every
// allow of writing.
//
// The front clones a source into its destination, and the sandbox works there.
// The source must stay as it was, also when it lies in a writable directory:
// /private/tmp bound, a wr bind, an allowWrite path. This follows the
// original's sandbox_darwin.cpp:368-369. The directories above a source inside
// a writable one cannot be renamed either, since that would carry the source
// out from under the deny.
func (g *gen) writeCowSources(b *builder) {
	if len(g.cowSources) == 0 {
		return
	}
	b.comment("cow sources: never writable, even inside a writable directory (sandbox_darwin.cpp:368-369)")
	var fs []expr
	var rules []labeled
	for _, src := range g.cowSources {
		m := pathMatcher(src, true).folded()
		fs = append(fs, m.filter().withComment("cow source "+src))
		rules = append(rules, labeled{m, "cow source " + src})
	}
	b.deny(opWrite, fs...)
	b.blank()
	g.writeAncestors(b, rules)
}

// scoped writes (action ops (require-all (require-any scope) (require-any
// rules))) for floating rules, which apply inside the user's directories
// only.
func (g *gen) scoped(b *builder, action string, ops []string, rules []labeled) {
	scope := g.userScope()
	if len(scope) == 0 {
		b.comment("(no bound directories: nothing for them to apply to)")
		b.blank()
		return
	}
	var filters []expr
	for _, r := range rules {
		filters = append(filters, r.m.filter().withComment(r.label))
	}
	b.rule(action, ops, requireAll(requireAny(scope...), expr{head: "require-any", kids: filters}))
	b.blank()
}

// split separates anchored rules from floating ones.
func split(rules []labeled) (anchored, floating []labeled) {
	for _, r := range rules {
		if r.m.anchored {
			anchored = append(anchored, r)
		} else {
			floating = append(floating, r)
		}
	}
	return anchored, floating
}

func filters(rules []labeled) []expr {
	var out []expr
	for _, r := range rules {
		out = append(out, r.m.filter().withComment(r.label))
	}
	return out
}

// writeAncestors denies renaming the directories above the paths of
// rules: renaming one would carry them out from under their rule.
func (g *gen) writeAncestors(b *builder, rules []labeled) {
	anchored, floating := split(rules)
	var fs, scopedFs []expr
	seen := map[string]bool{}
	for _, r := range anchored {
		for _, a := range r.m.ancestors() {
			// A literal directory matters only where it could be renamed.
			if a.isLiteral() && !g.belowWritable(a.path()) {
				continue
			}
			if f := a.filter(); !seen[f.key()] {
				seen[f.key()] = true
				fs = append(fs, f)
			}
		}
	}
	for _, r := range floating {
		for _, a := range r.m.ancestors() {
			if f := a.filter(); !seen[f.key()] {
				seen[f.key()] = true
				scopedFs = append(scopedFs, f)
			}
		}
	}
	slices.SortFunc(fs, func(a, b expr) int { return cmp.Compare(a.arg, b.arg) })
	slices.SortFunc(scopedFs, func(a, b expr) int { return cmp.Compare(a.arg, b.arg) })
	if len(fs) == 0 && len(scopedFs) == 0 {
		return
	}
	b.comment("the directories above them cannot be renamed (which would move them out from under the rule)")
	if len(fs) > 0 {
		b.deny(opUnlink, fs...)
	}
	if scope := g.userScope(); len(scopedFs) > 0 && len(scope) > 0 {
		b.deny(opUnlink, requireAll(requireAny(scope...), requireAny(scopedFs...)))
	}
	b.blank()
}

func (g *gen) writeDenyRead(b *builder) {
	if len(g.denyRead) == 0 {
		return
	}
	anchored, floating := split(g.denyRead)
	if len(anchored) > 0 {
		b.comment("denyRead paths: not readable, nor renamed or removed")
		b.deny(opReadUnlink, filters(anchored)...)
		b.blank()
	}
	if len(floating) > 0 {
		b.comment("denyRead name patterns, at any depth inside the bound directories")
		g.scoped(b, "deny", opReadUnlink, floating)
	}
	g.writeAncestors(b, g.denyRead)
}

// writeAllowRead punches the holes of allowRead in the denies above, only
// where the sandbox may read otherwise: an allowRead rule does not show
// what no bind shows.
func (g *gen) writeAllowRead(b *builder) {
	if len(g.allowRead) == 0 {
		return
	}
	roots := g.readableRoots()
	// regexAreas are the allowWrite rules with patterns whose paths may
	// meet those of an allowRead rule with the static prefix p.
	regexAreas := func(p string) []expr {
		var out []expr
		for _, r := range g.writeRegexes {
			if q := r.m.staticPrefix(); p == "" || pathtree.Within(p, q) || pathtree.Within(q, p) {
				out = append(out, r.m.filter())
			}
		}
		return out
	}
	inRoots := func(p string) bool {
		return slices.ContainsFunc(roots, func(r string) bool { return pathtree.Within(p, r) })
	}
	var plain, limited []expr
	b.comment("allowRead: holes in the denies above, where the sandbox may read otherwise")
	for _, r := range g.allowRead {
		m := r.m
		switch {
		case m.anchored && inRoots(m.staticPrefix()):
			plain = append(plain, m.filter().withComment(r.label))
		case m.anchored:
			// Above the readable directories: the hole is those inside it.
			p := m.staticPrefix()
			var in []expr
			for _, root := range roots {
				if pathtree.Below(root, p) {
					in = append(in, subpath(root))
				}
			}
			if m.isLiteral() {
				for _, ra := range regexAreas(p) {
					in = append(in, requireAll(m.filter(), ra))
				}
				if len(in) > 0 {
					limited = append(limited, requireAny(in...).withComment(r.label))
				}
			} else if in = append(in, regexAreas(p)...); len(in) > 0 {
				limited = append(limited, requireAll(m.filter(), requireAny(in...)).withComment(r.label))
			}
			if len(in) == 0 {
				b.comment(r.label + ": nothing readable there")
			}
		default:
			scope := append(subpaths(roots), regexAreas("")...)
			limited = append(limited, requireAll(m.filter(), requireAny(scope...)).withComment(r.label))
		}
	}
	if len(plain) > 0 {
		b.allow(opRead, plain...)
	}
	if len(limited) > 0 {
		b.allow(opRead, limited...)
	}
	b.blank()
}

// writeDenies writes the write denies of rules, at the end of the profile
// where no allow follows them.
func (g *gen) writeDenies(b *builder, header string, rules []labeled) {
	if len(rules) == 0 {
		return
	}
	anchored, floating := split(rules)
	if len(anchored) > 0 {
		b.comment(header)
		b.deny(opWrite, filters(anchored)...)
		b.blank()
	}
	if len(floating) > 0 {
		b.comment(header + ", at any depth inside the bound directories")
		g.scoped(b, "deny", opWrite, floating)
	}
	g.writeAncestors(b, rules)
}
