package host

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// The protected paths of a sandbox (see policy.ProtectedPaths and
// docs/security.md): what the writable binds expose of the protected list
// stays read-only, bound over itself; the entries the list keeps at the
// root of a bind get an empty read-only placeholder there when missing;
// the git control files of every repository found in a writable bind are
// protected; and a writable home is read-only but for its top-level
// directories that are not dot entries and a few caches.

// protectWalkBudget bounds the directories gatherProtectedPaths reads to
// find the protected entries and the repositories in the writable binds.
// When a bind holds more, the sandbox does not start: a protection that
// stopped at a budget would let a command hide a repository behind a
// flood of directories.
const protectWalkBudget = 100_000

// protectWalkSkip are directories gatherProtectedPaths does not look into:
// dependency trees and build output, large and not run by the host's
// tools automatically. (resolveFileRules' walk skips these too, see
// ruleWalkSkip.)
var protectWalkSkip = []string{"node_modules", ".venv", "__pycache__"}

// toolCaches are the names of tool and dependency caches, which the walks of
// GatherProtection and newRepositories do not look into either.
//
// No tool on the host acts on a .git, .devcontainer or .gitmodules inside
// them: a module's own files in Go's module cache, a package in npm's.
// Reporting them would only teach users to ignore the report, and a cache can
// hold more directories than the walks' budget.
var toolCaches = []string{".cache", ".npm"}

// skipWalk tells whether the walks do not go into the directory p, whose
// name is name: dependency trees, tool caches, and Go's module cache
// (GOPATH/pkg/mod).
func skipWalk(p, name string) bool {
	return slices.Contains(protectWalkSkip, name) || slices.Contains(toolCaches, name) ||
		name == "mod" && filepath.Base(filepath.Dir(p)) == "pkg"
}

// kernelFSPaths are the kernel's file systems, which the walks of the
// binds (GatherProtection, resolveFileRules) would otherwise go into on a
// bind of /.
var kernelFSPaths = []string{"/proc", "/sys", "/dev"}

// Protection is what GatherProtection found.
type Protection struct {
	// Paths are the protected host paths (SpecConfig.Protect).
	Paths []plan.HostPath
	// Repos are the .git entries (directories and gitfiles) found in the
	// writable binds. They are for telling the user about new ones at
	// exit.
	Repos []string
	// Dirs are the directories looked through, to find new repositories
	// at exit.
	Dirs []string
	// At is when they were found.
	At time.Time
}

// gatherProtectedPaths is GatherProtection's Paths.
func gatherProtectedPaths(sb policy.Sandbox, home, cwd string, extra ...string) ([]plan.HostPath, error) {
	p, err := GatherProtection(sb, home, cwd, extra...)
	return p.Paths, err
}

// GatherProtection finds the host paths that the wr binds of sb expose and
// that must stay read-only (for SpecConfig.Protect).
//
// They are:
//
//   - the entries of policy.ProtectedPaths and extra (the policy's
//     filesystem.protect), at any depth where they exist. At the root of each
//     wr bind, the AtRoot ones also when missing. In a wr bind of a directory
//     in home, the entries whose place in home is inside it also when missing.
//   - the git control files of every repository in the binds: .git
//     directories, gitfiles and the git directories they name, submodules' git
//     directories, and the files a config includes.
//   - when a wr bind exposes home itself, home read-only except its top-level
//     directories that are not dot entries and the caches of
//     policy.WritableHomeCaches. That is a "Tree" plan.HostPath with those as
//     Rebind.
//
// Paths that do not exist are returned as Missing, so that they cannot be
// created either. The runtime binds an empty read-only placeholder there,
// which makes an empty mount point on the host for the time of the sandbox.
// Placeholders for files outside a .git directory are directories: git ignores
// empty directories, so they show in no git status and cannot be committed. A
// protected path that is a symbolic link, or is under one, is an error naming
// it and what to do.
func GatherProtection(sb policy.Sandbox, home, cwd string, extra ...string) (Protection, error) {
	// The walk is guarded: a directory made, removed or renamed in a
	// directory it looked through (another sandbox writing the same bind,
	// swapping a directory for a link to hide a repository from it) makes
	// it walk again, and a bind that keeps changing refuses the start.
	for attempt := 1; ; attempt++ {
		guard := newWalkGuard()
		p, err := gatherProtection(sb, home, cwd, extra, guard)
		if !guard.moved() || err != nil {
			return p, err
		}
		if attempt == protectWalkAttempts {
			return Protection{Repos: p.Repos}, fmt.Errorf("the writable binds kept changing (directories made, removed or renamed) while boxsh looked through them %d times for git repositories and tool configuration to keep read-only: start again once they stand still", attempt)
		}
	}
}

// protectWalkAttempts bounds the walks of a GatherProtection whose binds
// change while it looks through them.
const protectWalkAttempts = 3

// gatherProtection is one walk of GatherProtection, each directory
// watched by guard before it is read.
func gatherProtection(sb policy.Sandbox, home, cwd string, extra []string, guard *walkGuard) (Protection, error) {
	g := newGatherer(sb, extra)
	g.guard = guard
	if filepath.IsAbs(home) {
		g.hostHome = filepath.Clean(home)
		g.homeDefaultDeny(g.hostHome)
	}
	for _, b := range sb.Binds {
		if b.Mode != policy.ReadWrite {
			continue
		}
		if err := g.walk(b.Dst); err != nil {
			return Protection{Repos: g.repos}, err
		}
	}
	// The working directory is a project's root too (a project in a
	// writable home, a subdirectory of a bind), unless it is in a
	// protected path or a git directory.
	if filepath.IsAbs(cwd) {
		cwd = filepath.Clean(cwd)
		if _, covered := policy.IsProtected(cwd); !covered && !strings.Contains(cwd+"/", "/.git/") {
			if fi, err := os.Lstat(cwd); err == nil && fi.IsDir() {
				g.atRoot(cwd)
			}
		}
	}
	for _, p := range ownPrograms() {
		g.protect(p, false, "boxsh's own program, which the host runs at the next start")
	}
	if g.err != nil {
		return Protection{Repos: g.repos}, g.err
	}
	return Protection{Paths: g.finish(), Repos: g.repos, Dirs: g.dirs, At: time.Now()}, nil
}

// ownPrograms are the real paths of boxsh's own programs that exist: the
// running executable and, beside it, boxsh-init, boxsh-launch and the fork
// server, and those that $BOXSH_INIT and $BOXSH_LAUNCH name. A sandbox that
// could write one (boxsh installed in a project it binds writable) would
// choose what the host runs at the next start.
func ownPrograms() []string {
	var paths []string
	if exe, err := os.Executable(); err == nil {
		paths = append(paths, exe)
		for _, name := range []string{"boxsh", "boxsh-init", LauncherName, "boxsh-zygote.so"} {
			paths = append(paths, filepath.Join(filepath.Dir(exe), name))
		}
	}
	for _, env := range []string{"BOXSH_INIT", LauncherEnv} {
		if p := os.Getenv(env); p != "" {
			paths = append(paths, p)
		}
	}
	var out []string
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || slices.Contains(out, real) {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() {
			out = append(out, real)
		}
	}
	return out
}

// newGatherer starts a GatherProtection of sb with the list and extra.
func newGatherer(sb policy.Sandbox, extra []string) *gatherer {
	g := &gatherer{sb: sb, extra: extra, seen: map[string]bool{}, budget: protectWalkBudget}
	for _, e := range policy.ProtectedPaths {
		if !strings.HasPrefix(e.Path, ".git/") {
			g.entries = append(g.entries, e)
		}
	}
	for _, e := range extra {
		g.entries = append(g.entries, policy.ProtectedEntry{Path: e, Reason: "protected by the policy (filesystem.protect)", AtRoot: true})
	}
	return g
}

// gatherer is the state of GatherProtection.
type gatherer struct {
	sb      policy.Sandbox
	entries []policy.ProtectedEntry // the list but the .git/ entries
	extra   []string                // the user's entries (also in entries)
	out     []plan.HostPath
	seen    map[string]bool
	repos   []string
	dirs    []string // the directories walked
	budget  int
	err     error
	// home, when a wr bind exposes it, is read-only but for rebind.
	home   string
	rebind []string
	// noRootPlaceholders leaves out the entries the list keeps at the
	// root of a bind when missing (atRoot), for checkCache.
	noRootPlaceholders bool
	// skip are directories the walk does not look into (checkCache's).
	skip []string
	// hostHome is the caller's home directory, "" for none: the entries
	// of the list that have their place in it are protected there even
	// when missing (homeEntries).
	hostHome string
	// guard watches each directory walked, before it is read (nil: none).
	guard *walkGuard
}

// root is the wr bind that p is writable through: the most specific bind
// that shows p must be a wr bind.
func (g *gatherer) root(p string) (string, bool) {
	b := plan.BindShowing(g.sb, p)
	if b == nil {
		return "", false
	}
	return b.Dst, b.Mode == policy.ReadWrite
}

// readOnly tells whether p is read-only already: in a writable home, and
// neither rebound writable nor in a bind inside the home.
func (g *gatherer) readOnly(p string) bool {
	if g.home == "" || !pathtree.Below(p, g.home) {
		return false
	}
	if r, _ := g.root(p); len(r) > len(g.home) {
		return false // a bind of its own
	}
	return !slices.ContainsFunc(g.rebind, func(d string) bool { return pathtree.Within(p, d) })
}

// homeDefaultDeny makes home read-only when a wr bind exposes it whole, except
// its top-level directories that are not dot entries, and the caches.
//
// So dot entries at the top of home (start-up files, ~/.config, ~/.local/bin)
// can be neither changed nor created.
func (g *gatherer) homeDefaultDeny(home string) {
	r, ok := g.root(home)
	if !ok || !pathtree.Within(home, r) || home == "/" {
		return
	}
	for _, b := range g.sb.Binds {
		if b.Dst == r && b.Src != b.Dst {
			return
		}
	}
	for d := home; pathtree.Below(d, r); d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return // a symlink or missing home: nothing to keep
		}
	}
	entries, err := os.ReadDir(home)
	if err != nil {
		return
	}
	bound := func(p string) bool {
		return slices.ContainsFunc(g.sb.Binds, func(b policy.Bind) bool { return b.Dst == p })
	}
	var rebind []string
	for _, e := range entries {
		p := filepath.Join(home, e.Name())
		if !strings.HasPrefix(e.Name(), ".") && e.IsDir() && !bound(p) {
			rebind = append(rebind, p)
		}
	}
	for _, c := range policy.WritableHomeCaches {
		p := filepath.Join(home, c)
		if !bound(p) && noSymlinkBetween(home, p) {
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				rebind = append(rebind, p)
			}
		}
	}
	g.home, g.rebind = home, rebind
	g.seen[home] = true
	g.out = append(g.out, plan.HostPath{Path: home, Dir: true, Tree: true, Rebind: rebind,
		Reason: "a writable home is read-only but for its top-level directories that are not dot entries and the caches (" + strings.Join(policy.WritableHomeCaches, ", ") + ")"})
	// Symlinks at the top of home and of ~/.config are read-only, but
	// their targets may be in a writable directory (dotfiles managers):
	// those targets are protected.
	for _, dir := range []string{home, filepath.Join(home, ".config")} {
		des, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, de := range des {
			if de.Type()&os.ModeSymlink == 0 || dir == home && !strings.HasPrefix(de.Name(), ".") {
				continue
			}
			if t, err := filepath.EvalSymlinks(filepath.Join(dir, de.Name())); err == nil && !g.readOnly(t) {
				if fi, err := os.Stat(t); err == nil {
					g.protect(t, fi.IsDir(), "the target of "+filepath.Join(dir, de.Name()))
				}
			}
		}
	}
}

// noSymlinkBetween tells whether no directory from below top down to p
// (p included) is a symbolic link.
func noSymlinkBetween(top, p string) bool {
	for d := p; pathtree.Below(d, top); d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return false
		}
	}
	return true
}

// protect adds p, which exists, to the protected paths when a wr bind
// exposes it.
func (g *gatherer) protect(p string, dir bool, reason string) {
	g.add(p, dir, reason, false, "")
}

// add adds p to the protected paths, when a wr bind exposes it and it is not
// read-only already.
//
// When p is missing and placeholder is set, p is added as a Missing path with
// an empty placeholder, or one holding content.
func (g *gatherer) add(p string, dir bool, reason string, placeholder bool, content string) {
	if g.seen[p] {
		return
	}
	r, ok := g.root(p)
	if !ok || g.readOnly(p) {
		return
	}
	// Neither p nor a directory between the bind and p may be a symbolic
	// link: the link itself could be replaced, and a bind would follow it.
	for d := p; pathtree.Within(d, r); d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if g.err == nil {
				target, _ := os.Readlink(d)
				g.err = fmt.Errorf("%s is a symbolic link (to %s) at a path boxsh keeps read-only in the writable bind %s (%s), and boxsh cannot keep a link read-only: if you did not make it, remove it (rm %s); else bind a directory that does not hold it, or use a cow bind",
					d, target, r, reason, d)
			}
			return
		}
		if d == r {
			break
		}
	}
	g.seen[p] = true
	hp, ok := lookupHostPath(p)
	if ok && placeholder && leftPlaceholder(p) {
		ok = false // an earlier sandbox's, or a bundle's run: still missing
	}
	if !ok {
		if !placeholder {
			return
		}
		// Missing: a placeholder makes it, and the runtime makes the
		// missing directories above it (MissingFrom is the first), which
		// are pinned like the others.
		from := p
		for d := filepath.Dir(p); d != filepath.Dir(d); d = filepath.Dir(d) {
			if _, err := os.Lstat(d); !os.IsNotExist(err) {
				break
			}
			from = d
		}
		hp = plan.HostPath{Path: p, Dir: dir, Missing: true, MissingFrom: from, Content: content}
	}
	hp.Reason = reason
	for d := filepath.Dir(hp.Path); pathtree.Below(d, r); d = filepath.Dir(d) {
		hp.Pins = append(hp.Pins, d)
	}
	g.out = append(g.out, hp)
}

// leftPlaceholder tells whether p is a placeholder with content that boxsh
// made and left.
//
// A bundle's mount point stays after runc's run, and a killed front's until
// the reaper or the next start. Such a placeholder is a read-only regular file
// holding exactly its placeholder content (plan.PlaceholderContent).
func leftPlaceholder(p string) bool {
	if plan.PlaceholderContent(filepath.Base(p)) == "" {
		return false
	}
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == 0o444 && isPlaceholder(p)
}

// walk looks through the wr bind at root for the protected entries and
// the repositories, within the budget.
func (g *gatherer) walk(root string) error {
	if g.readOnly(root) {
		return nil
	}
	// A bind inside a protected directory, or of a .git directory.
	rel := strings.TrimPrefix(root, "/")
	if filepath.Base(root) == ".git" {
		g.gitDir(root)
		return nil
	}
	fi, err := os.Stat(root)
	if reason, ok := policy.IsProtected(rel, g.extra...); ok {
		g.protect(root, err == nil && fi.IsDir(), reason)
		return nil
	}
	if err != nil || !fi.IsDir() {
		return nil // a file: nothing below it
	}
	// Entries of several components that the bind starts inside
	// (--bind wr:~/.config: git/ is .config/git/), where they exist.
	g.homeEntries(root)
	rc := strings.Split(rel, "/")
	for _, e := range g.entries {
		ec := strings.Split(strings.Trim(e.Path, "/"), "/")
		for j := 1; j < len(ec) && j <= len(rc); j++ {
			if slices.Equal(rc[len(rc)-j:], ec[:j]) {
				p := filepath.Join(append([]string{root}, ec[j:]...)...)
				g.protect(p, strings.HasSuffix(e.Path, "/"), e.Reason)
			}
		}
	}
	if !g.noRootPlaceholders {
		g.atRoot(root)
	}
	queue := []string{root}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		if g.budget--; g.budget < 0 {
			return fmt.Errorf("the writable bind %s holds more than %d directories, more than boxsh looks through to keep git repositories and tool configuration in it read-only: bind a smaller directory, or use a cow bind", root, protectWalkBudget)
		}
		g.dirs = append(g.dirs, dir)
		g.guard.watch(dir)
		des, err := os.ReadDir(dir)
		if err != nil {
			continue // unreadable: the sandbox cannot change it either
		}
		for _, de := range des {
			name := de.Name()
			p := filepath.Join(dir, name)
			if name == ".git" {
				g.repo(p, de)
				continue
			}
			if g.matchEntry(p, name) || !de.IsDir() || skipWalk(p, name) || slices.Contains(kernelFSPaths, p) || slices.Contains(g.skip, p) || g.readOnly(p) {
				continue
			}
			queue = append(queue, p)
		}
	}
	return nil
}

// homeEntries protects, even when missing, the entries of the list whose place
// in the caller's home is inside the wr bind at root, a directory in the home.
//
// For example, --bind wr:~/.config protects ~/.config/autostart/ and
// ~/.config/systemd/user/, and --bind wr:~/.local protects ~/.local/bin/.
// Programs of the host run what is there, wherever the bind starts. A missing
// entry gets a placeholder (see addMissing). A bind of the home itself, or of
// a directory above it, makes the home read-only instead (see
// homeDefaultDeny).
func (g *gatherer) homeEntries(root string) {
	if g.hostHome == "" || !pathtree.Below(root, g.hostHome) {
		return
	}
	at, _ := filepath.Rel(g.hostHome, root)
	for _, e := range g.entries {
		rest, ok := strings.CutPrefix(strings.Trim(e.Path, "/"), filepath.ToSlash(at)+"/")
		if ok {
			g.addMissing(filepath.Join(root, filepath.FromSlash(rest)), e)
		}
	}
}

// atRoot protects the entries the list keeps at the root of a bind even
// when missing, at dir.
func (g *gatherer) atRoot(dir string) {
	for _, e := range g.entries {
		if e.AtRoot && !strings.Contains(strings.Trim(e.Path, "/"), "/") {
			g.addMissing(filepath.Join(dir, strings.Trim(e.Path, "/")), e)
		}
	}
}

// addMissing protects entry e at p, with a placeholder when p is missing.
//
// The placeholder is a directory for a directory. For a file, it is a
// read-only file whose readers take it for nothing: empty, or
// plan.PlaceholderContent (an .mcp.json of no servers). So the host's tools,
// such as Claude Code and git, keep working while the sandbox runs.
func (g *gatherer) addMissing(p string, e policy.ProtectedEntry) {
	dir := strings.HasSuffix(e.Path, "/")
	content := ""
	if !dir {
		content = plan.PlaceholderContent(filepath.Base(p))
	}
	g.add(p, dir, e.Reason, true, content)
}

// matchEntry protects what the entries of the list starting with name name,
// where name is an entry of the directory of p.
//
// It tells whether p itself is protected, and then not to be looked into.
func (g *gatherer) matchEntry(p, name string) bool {
	whole := false
	for _, e := range g.entries {
		path := strings.Trim(e.Path, "/")
		first, rest, several := strings.Cut(path, "/")
		if first != name {
			continue
		}
		dir := strings.HasSuffix(e.Path, "/")
		if !several {
			if _, err := os.Lstat(p); err == nil {
				g.protect(p, dir, e.Reason)
				whole = true
			}
			continue
		}
		q := filepath.Join(p, filepath.FromSlash(rest))
		if _, err := os.Lstat(q); err == nil {
			g.protect(q, dir, e.Reason)
		}
	}
	return whole
}

// repo protects the repository whose .git entry is p: a directory, or a
// gitfile ("gitdir: PATH") naming the git directory elsewhere.
func (g *gatherer) repo(p string, de os.DirEntry) {
	g.repos = append(g.repos, p)
	switch {
	case de.IsDir():
		g.gitDir(p)
	case de.Type().IsRegular():
		g.protect(p, false, "a gitfile: it names the repository's git directory, whose config and hooks git uses")
		if gd := readGitfile(p); gd != "" {
			if fi, err := os.Stat(gd); err == nil && fi.IsDir() {
				g.gitDir(gd)
			}
		}
	default: // a symlink: git follows it
		g.protect(p, false, "a repository's .git")
	}
}

// readGitfile returns the git directory a gitfile names, or "".
func readGitfile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil || len(b) > 4096 {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gd, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(p), gd)
	}
	return filepath.Clean(gd)
}

// gitDir protects the control files of the git directory gd, those of
// policy.ProtectedPaths' .git/ entries.
//
// They are config and the files it includes, hooks, commondir,
// config.worktree, worktrees and info, and the git directories of submodules
// under modules. Missing ones get placeholders:
//
//   - a missing hooks directory, an empty directory;
//   - a missing commondir, a file holding ".", which git reads as no
//     redirection (an empty one would make it fail);
//   - a missing config.worktree, an empty file, when the config turns
//     extensions.worktreeConfig on.
//
// In a .git directory git lists no files, so these placeholders show in no git
// status.
func (g *gatherer) gitDir(gd string) {
	reasons := map[string]string{}
	for _, e := range policy.ProtectedPaths {
		if rest, ok := strings.CutPrefix(e.Path, ".git/"); ok {
			reasons[strings.TrimSuffix(rest, "/")] = e.Reason
		}
	}
	at := func(name string) string { return filepath.Join(gd, name) }
	g.add(at("config"), false, reasons["config"], true, "")
	g.add(at("hooks"), true, reasons["hooks"], true, "")
	g.add(at("commondir"), false, reasons["commondir"], true, plan.PlaceholderContent("commondir"))
	cfg, _ := os.ReadFile(at("config"))
	if bytes.Contains(bytes.ToLower(cfg), []byte("worktreeconfig")) {
		g.add(at("config.worktree"), false, reasons["config.worktree"], true, "")
	} else {
		g.protect(at("config.worktree"), false, reasons["config.worktree"])
	}
	g.protect(at("worktrees"), true, reasons["worktrees"])
	g.add(at("info"), true, reasons["info"], true, "")
	g.includes(at("config"), 0)
	g.includes(at("config.worktree"), 0)
	// Submodules' git directories (nested ones under their own modules).
	modules := at("modules")
	if fi, err := os.Lstat(modules); err == nil && fi.IsDir() {
		g.modules(modules, 0)
	}
}

// modules protects the git directories under dir, a modules directory
// of a git directory (submodule names may hold slashes).
func (g *gatherer) modules(dir string, depth int) {
	if depth > 8 || g.budget <= 0 {
		return
	}
	g.budget--
	des, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if !de.IsDir() {
			continue
		}
		p := filepath.Join(dir, de.Name())
		if fi, err := os.Lstat(filepath.Join(p, "HEAD")); err == nil && fi.Mode().IsRegular() {
			g.gitDir(p)
		} else {
			g.modules(p, depth+1)
		}
	}
}

// includes protects the files the git config file at p includes
// (include.path, includeIf.*.path), and theirs, where they exist.
func (g *gatherer) includes(p string, depth int) {
	if depth > 5 {
		return
	}
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	home, _ := os.UserHomeDir()
	var section string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section, _, _ = strings.Cut(strings.ToLower(strings.TrimPrefix(line, "[")), "]")
			section, _, _ = strings.Cut(section, " ")
			section, _, _ = strings.Cut(section, "\"")
			if i := strings.Index(line, "]"); i >= 0 {
				line = strings.TrimSpace(line[i+1:])
			} else {
				continue
			}
		}
		if section != "include" && section != "includeif" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "path") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		switch {
		case strings.HasPrefix(v, "~/") && home != "":
			v = filepath.Join(home, v[2:])
		case !filepath.IsAbs(v):
			v = filepath.Join(filepath.Dir(p), v)
		}
		v = filepath.Clean(v)
		// A missing one gets an empty file, so that it cannot be made.
		if fi, err := os.Stat(v); err != nil || !fi.IsDir() {
			g.add(v, false, "a file the git configuration "+p+" includes", err != nil, "")
			g.includes(v, depth+1)
		}
	}
}

// finish returns the protected paths, without those inside another
// protected directory (read-only already: a placeholder could not be
// made there) and their pins.
func (g *gatherer) finish() []plan.HostPath {
	var dirs []string
	for _, hp := range g.out {
		if hp.Dir && !hp.Tree {
			dirs = append(dirs, hp.Path)
		}
	}
	inside := func(p string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return pathtree.Below(p, d) })
	}
	out := g.out[:0]
	for _, hp := range g.out {
		if inside(hp.Path) {
			continue
		}
		hp.Pins = slices.DeleteFunc(hp.Pins, inside)
		out = append(out, hp)
	}
	return out
}

// ProtectEntries are the policy's filesystem.protect entries, for
// GatherProtection.
func ProtectEntries(p policy.Policy) []string { return ruleValues(p.Protect) }

// ruleValues are the values of rules.
func ruleValues(rules []policy.Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Value
	}
	return out
}

// newRepositories lists what a command made in the writable binds of sb that
// boxsh cannot keep read-only.
//
//   - repos are repositories (.git directories and gitfiles) that are not
//     among start.Repos, the ones found at the start. A command can give them
//     a configuration or hooks that run programs when the user runs git there.
//     Each comes with what in it does so, if anything.
//   - entries are entries of the protected list that were not there at the
//     start (a new sub/.claude/settings.json), each with its reason.
//
// Of the directories GatherProtection looked through (start.Dirs),
// newRepositories reads again only those changed (status change time) since a
// second before since, and the directories new in them. A new entry changes
// its directory, and a command cannot set a change time back.
func newRepositories(sb policy.Sandbox, home string, start Protection, since time.Time) (repos, entries []string) {
	g := newGatherer(sb, nil)
	if filepath.IsAbs(home) {
		g.homeDefaultDeny(filepath.Clean(home))
	}
	old := make(map[string]bool, len(start.Paths)+len(start.Dirs))
	for _, hp := range start.Paths {
		old[hp.Path] = true
	}
	var foundRepos, foundEntries []string
	if start.Dirs == nil {
		foundRepos, foundEntries = g.findNew(g.writableRoots(), old)
	} else {
		var changed []string
		limit := since.Add(-time.Second).UnixNano()
		for _, d := range start.Dirs {
			old[d] = true
			var st unix.Stat_t
			if unix.Lstat(d, &st) == nil && st.Ctim.Nano() >= limit {
				changed = append(changed, d)
			}
		}
		foundRepos, foundEntries = g.findNew(changed, old)
	}
	for _, r := range foundRepos {
		if slices.Contains(start.Repos, r) {
			continue
		}
		if what := gitRunsPrograms(r); what != "" {
			r += " (" + what + ")"
		}
		repos = append(repos, r)
	}
	return repos, foundEntries
}

// gitRunsPrograms names what in the repository whose .git entry is p
// makes git run a program: hooks, and configuration keys that do.
func gitRunsPrograms(p string) string {
	gd := p
	var found []string
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		gd = readGitfile(p)
		if gd == "" {
			return "a gitfile"
		}
		found = append(found, "a gitfile naming "+gd)
	}
	if des, err := os.ReadDir(filepath.Join(gd, "hooks")); err == nil {
		for _, de := range des {
			if !strings.HasSuffix(de.Name(), ".sample") {
				found = append(found, "hooks/"+de.Name())
			}
		}
	}
	for _, name := range []string{"config", "config.worktree", "commondir"} {
		b, err := os.ReadFile(filepath.Join(gd, name))
		if err != nil {
			continue
		}
		if name == "commondir" {
			found = append(found, "commondir")
			continue
		}
		low := strings.ToLower(string(b))
		for _, k := range []string{"fsmonitor", "hookspath", "sshcommand", "pager", "editor", "[alias", "[include", "[filter", "[diff", "worktreeconfig"} {
			if strings.Contains(low, k) {
				found = append(found, name+": "+strings.Trim(k, "["))
			}
		}
	}
	return strings.Join(found, ", ")
}

// writableRoots are the destinations of the wr binds.
func (g *gatherer) writableRoots() []string {
	var roots []string
	for _, b := range g.sb.Binds {
		if b.Mode == policy.ReadWrite && !g.readOnly(b.Dst) {
			roots = append(roots, b.Dst)
		}
	}
	return roots
}

// findNew lists the .git entries in the directories dirs and below them, and
// the entries of the list there that are not in old, with their reason.
//
// It looks where GatherProtection looks, within the budget. It does not go
// down into the directories of old, which are read on their own when they
// changed.
func (g *gatherer) findNew(dirs []string, old map[string]bool) (repos, entries []string) {
	queue := dirs
	for len(queue) > 0 && g.budget > 0 {
		dir := queue[0]
		queue = queue[1:]
		g.budget--
		des, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, de := range des {
			name := de.Name()
			p := filepath.Join(dir, name)
			if name == ".git" {
				repos = append(repos, p)
				continue
			}
			for _, e := range g.entries {
				first, rest, _ := strings.Cut(strings.Trim(e.Path, "/"), "/")
				if first != name {
					continue
				}
				q := filepath.Join(p, filepath.FromSlash(rest))
				if _, err := os.Lstat(q); err == nil && !old[q] && !g.readOnly(q) {
					entries = append(entries, q+" ("+e.Reason+")")
				}
			}
			if de.IsDir() && !old[p] && !skipWalk(p, name) && !g.readOnly(p) {
				queue = append(queue, p)
			}
		}
	}
	return repos, entries
}

// cowProtectedChanges lists what a sandbox changed in the cow bind b that the
// protected list covers (policy.IsProtected; extra are the user's entries).
//
// It lists the entries of b's upper directory that are protected paths, and
// .git entries that SRC does not have (new repositories). The upper directory
// is DST on the host, which holds only what the sandbox changed. Such changes
// are not to be applied to SRC, and the host's tools must not be run in DST
// before they are checked. Directories that only hold changes (copied up) are
// not listed themselves. Dependency trees (node_modules, ...) are not looked
// into.
func cowProtectedChanges(b policy.Bind, extra ...string) []string {
	if b.Mode != policy.CopyOnWrite {
		return nil
	}
	var out []string
	budget := protectWalkBudget
	queue := []string{b.Dst}
	for len(queue) > 0 && budget > 0 {
		dir := queue[0]
		queue = queue[1:]
		budget--
		des, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, de := range des {
			p := filepath.Join(dir, de.Name())
			rel, err := filepath.Rel(b.Dst, p)
			if err != nil {
				continue
			}
			if de.IsDir() {
				if de.Name() == ".git" {
					if _, err := os.Lstat(filepath.Join(b.Src, rel)); err != nil {
						out = append(out, p+" (a new repository)")
						continue
					}
				}
				if !slices.Contains(protectWalkSkip, de.Name()) {
					queue = append(queue, p)
				}
				continue
			}
			if reason, ok := policy.IsProtectedAt(filepath.ToSlash(b.Src), filepath.ToSlash(rel), extra...); ok {
				out = append(out, p+" ("+reason+")")
			}
		}
	}
	return out
}
