package darwin

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/boxsh/boxsh/policy"
)

// The network modes of ProfileConfig.Network.
const (
	// NetworkDisabled denies the network; only Unix-domain sockets inside
	// the writable bound directories (and socket pairs) work.
	NetworkDisabled = "disabled"
	// NetworkAllowAll allows the whole network.
	NetworkAllowAll = "allow_all"
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
	// /private/var/folders/...), writable; empty leaves only /private/tmp.
	TmpDir string
	// HardDenied are the paths no setting makes writable: names or
	// relative paths matched at any depth inside the bound directories
	// (".bashrc", ".git/config"), directories when they end in "/"
	// (".git/hooks/": the directory and everything below it).
	HardDenied []string
	// Network is NetworkDisabled or NetworkAllowAll; empty means
	// NetworkDisabled with Sandbox.NewNetNS, else NetworkAllowAll.
	Network string
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
	hostSystem    bool
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
	case NetworkAllowAll:
		if sb.NewNetNS {
			return nil, errors.New("network allow_all contradicts --new-net-ns")
		}
		g.network = cfg.Network
	default:
		return nil, fmt.Errorf("unknown network mode %q (expected %q or %q)", cfg.Network, NetworkDisabled, NetworkAllowAll)
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
		g.addArea(tmp, areaReadWrite, "temporary directory ($TMPDIR)", false)
	}
	g.addArea("/private/tmp", areaReadWrite, "/tmp (shared with the host)", false)

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
	if g.allowRead, err = rules("allowRead", pol.AllowRead); err != nil {
		return nil, err
	}
	if g.denyWrite, err = rules("denyWrite", pol.DenyWrite); err != nil {
		return nil, err
	}
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
		g.hardDenied = append(g.hardDenied, labeled{m, "hard-denied " + e})
	}

	// Outermost first, so that an inner bind's rule follows (and wins
	// over) the rule of the bind around it.
	slices.SortFunc(g.areas, func(a, b *area) int {
		return cmp.Or(cmp.Compare(depth(a.path), depth(b.path)), cmp.Compare(a.path, b.path), cmp.Compare(a.kind, b.kind))
	})
	for _, a := range g.areas {
		slices.Sort(a.labels)
	}
	return g, nil
}

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

// depth is the number of components of the clean absolute path p.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// within tells whether the clean absolute path p is root or below it.
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// below tells whether p is strictly below root.
func below(p, root string) bool { return p != root && within(p, root) }

// outermost sorts paths and removes duplicates and the paths inside
// another.
func outermost(paths []string) []string {
	paths = slices.Clone(paths)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	return slices.DeleteFunc(paths, func(p string) bool {
		return slices.ContainsFunc(paths, func(r string) bool { return below(p, r) })
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
	return slices.ContainsFunc(g.writable(), func(w string) bool { return below(p, w) })
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
		if !slices.ContainsFunc(paths, func(p string) bool { return within(r.m.staticPrefix(), p) }) {
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
	b.line("(allow sysctl-read)")
	b.line("(allow ipc-posix-sem)")
	b.blank()
	b.comment("system services: user look-ups, logging, notifications, temporary directories")
	var names []expr
	for _, n := range machServices {
		names = append(names, expr{head: "global-name", arg: n})
	}
	b.allow([]string{"mach-lookup"}, names...)
	b.blank()
	b.comment("devices")
	b.allow(opRead, literals(readDevices)...)
	b.allow(opReadWrite, append(literals(writeDevices), subpath("/dev/fd"))...)
	b.allow([]string{"file-ioctl"}, literals(ioctlDevices)...)
	b.comment("pseudo-terminals: new ones (openpty), and the ioctls of the one the shell was given")
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
	b.comment("network: disabled; Unix-domain sockets only inside the writable bound directories")
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
}

func (g *gen) writeSystemFiles(b *builder) {
	roots := g.systemRoots()
	b.comment("system files, read-only (/usr covers /usr/local); /etc, /tmp and /var are links into /private")
	b.allow(opRead, append(subpaths(roots), literals(systemLinks)...)...)

	// The directories above everything readable: their attributes only,
	// so that realpath and getcwd work.
	readable := g.readableRoots()
	var above []string
	add := func(p string) {
		for d := path.Dir(p); ; d = path.Dir(d) {
			if !slices.ContainsFunc(readable, func(r string) bool { return within(d, r) }) {
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
				b.deny(opWrite, subpath(a.path))
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
			if q := r.m.staticPrefix(); p == "" || within(p, q) || within(q, p) {
				out = append(out, r.m.filter())
			}
		}
		return out
	}
	inRoots := func(p string) bool {
		return slices.ContainsFunc(roots, func(r string) bool { return within(p, r) })
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
				if below(root, p) {
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
