package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// ruleWalkLimit bounds the entries resolveFileRules looks at to find the
// paths name patterns (".env", "*.pem") match, across all binds, and
// ruleWalkTimeout the time it takes. A walk that cannot finish fails: the
// sandbox does not start rather than leave a match uncovered. (A variable
// for the tests, which lower it; nothing else sets it.)
var (
	ruleWalkLimit   = 200_000
	ruleWalkTimeout = 20 * time.Second
)

// ErrFileRules marks a failure to resolve the file rules: the sandbox
// cannot be started with its policy enforced.
var ErrFileRules = errors.New("file rules")

// fileRulesError is an error that is ErrFileRules.
type fileRulesError struct{ msg string }

func (e fileRulesError) Error() string        { return "file rules: " + e.msg }
func (e fileRulesError) Is(target error) bool { return target == ErrFileRules }

// ruleWalkSkip are directories whose content name patterns do not look into.
// They are dependency trees and version control data, large and not secret:
// those of protectWalkSkip and a few more.
var ruleWalkSkip = append(slices.Clip(protectWalkSkip), ".git", "vendor", "target")

// allowWriteBinds turns the policy's allowWrite rules into wr binds, for
// the paths that no bind exposes yet (a plain name is a path in cwd). A
// path that does not exist, or a name pattern, is an error naming the
// rule.
func allowWriteBinds(sb policy.Sandbox, p policy.Policy, home, cwd string) ([]policy.Bind, error) {
	var binds []policy.Bind
	for _, r := range p.AllowWrite {
		path, pattern := rulePath(r.Value, home, cwd)
		if pattern {
			if strings.ContainsAny(r.Value, `*?[\`) {
				return nil, fmt.Errorf("filesystem.allowWrite %q (%s): a writable path must be a path, not a name pattern", r.Value, r.Source)
			}
			path = filepath.Join(cwd, r.Value) // a plain name: in the project
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("filesystem.allowWrite %q (%s): %w", r.Value, r.Source, err)
		}
		if slices.ContainsFunc(sb.Binds, func(b policy.Bind) bool { return b.Dst == path }) {
			continue
		}
		binds = append(binds, policy.Bind{Mode: policy.ReadWrite, Src: path, Dst: path})
	}
	return binds, nil
}

// resolveFileRules finds the paths that the policy's denyRead and denyWrite
// rules cover among what the sandbox's binds expose.
//
//   - Paths (absolute, "~/", or relative to cwd) that exist under a bind.
//   - Every entry whose name a name pattern matches, found by walking the
//     binds within a budget. Dependency and VCS directories are not looked
//     into.
//
// allowRead rules exempt what they match from denyRead. Symlinks are left
// alone: the sandbox resolves them to their targets, which the rules cover
// where they match. Paths that other mounts replace (system directories) are
// not looked at.
func resolveFileRules(sb policy.Sandbox, p policy.Policy, home, cwd string) (plan.FileRules, error) {
	var fr plan.FileRules
	w := &ruleWalk{left: ruleWalkLimit, deadline: time.Now().Add(ruleWalkTimeout), uid: os.Geteuid()}
	allowed := func(path string) bool {
		for _, r := range p.AllowRead {
			rp, pattern := rulePath(r.Value, home, cwd)
			if pattern && matchName(r.Value, filepath.Base(path)) || !pattern && pathtree.Within(path, rp) {
				return true
			}
		}
		return false
	}
	deny := func(rules []policy.Rule, writable bool, out *[]plan.RuledPath) error {
		add := func(f plan.RuledPath) {
			if (writable || !allowed(f.Path)) && !slices.ContainsFunc(*out, func(o plan.RuledPath) bool { return o.Path == f.Path }) {
				*out = append(*out, f)
			}
		}
		var patterns []namePattern
		for _, r := range rules {
			label := fmt.Sprintf("%s (%s)", r.Value, r.Source)
			path, pattern := rulePath(r.Value, home, cwd)
			if pattern {
				patterns = append(patterns, namePattern{r.Value, label})
				continue
			}
			for _, b := range sb.Binds {
				if writable && b.Mode == policy.ReadOnly || !pathtree.Within(path, b.Dst) {
					continue
				}
				if fi, err := os.Lstat(hostPathIn(b, path)); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
					add(plan.RuledPath{Path: path, Dir: fi.IsDir(), Rule: label})
				}
			}
		}
		if len(patterns) == 0 {
			return nil
		}
		// One walk of each bind for all the name patterns.
		for _, b := range sb.Binds {
			if writable && b.Mode == policy.ReadOnly {
				continue
			}
			found, err := w.matches(b, patterns)
			if err != nil {
				return w.explain(b, patterns, err)
			}
			for _, f := range found {
				add(f)
			}
		}
		return nil
	}
	if err := deny(p.DenyRead, false, &fr.DenyRead); err != nil {
		return fr, err
	}
	if err := deny(p.DenyWrite, true, &fr.DenyWrite); err != nil {
		return fr, err
	}
	for _, list := range [][]plan.RuledPath{fr.DenyRead, fr.DenyWrite} {
		for i := range list {
			list[i].Pins = pinsFor(sb, list[i].Path)
		}
	}
	return fr, nil
}

// pinsFor are the directories to pin above path: those strictly between
// it and the most specific bind that shows it, when that is a wr bind.
// (In a ro bind nothing can be renamed; in a cow bind the overlay refuses
// to rename a directory of SRC, EXDEV.)
func pinsFor(sb policy.Sandbox, path string) []string {
	via := plan.BindShowing(sb, path)
	if via == nil || via.Mode != policy.ReadWrite {
		return nil
	}
	var pins []string
	for d := filepath.Dir(path); pathtree.Below(d, via.Dst); d = filepath.Dir(d) {
		pins = append(pins, d)
	}
	return pins
}

// rulePath resolves a rule: its path, or that it is a name pattern.
func rulePath(rule, home, cwd string) (path string, pattern bool) {
	switch {
	case strings.HasPrefix(rule, "~/"):
		return filepath.Join(home, rule[2:]), false
	case filepath.IsAbs(rule):
		return filepath.Clean(rule), false
	case !strings.Contains(rule, "/"):
		return "", true
	}
	return filepath.Join(cwd, rule), false
}

// matchName matches a name pattern against a file name.
func matchName(pattern, name string) bool {
	ok, _ := filepath.Match(pattern, name)
	return ok
}

// hostPathIn is where the host has the sandbox path p under bind b: for a
// cow bind, in SRC when DST does not have it.
func hostPathIn(b policy.Bind, p string) string {
	if b.Mode != policy.CopyOnWrite {
		return p
	}
	if _, err := os.Lstat(p); err == nil {
		return p
	}
	rel, err := filepath.Rel(b.Dst, p)
	if err != nil {
		return p
	}
	return filepath.Join(b.Src, rel)
}

// namePattern is a rule's name pattern and its label.
type namePattern struct {
	pattern, label string
}

// ruleWalk is the walk of the binds for name patterns, within its limits.
type ruleWalk struct {
	// left is how many more entries it may look at.
	left     int
	deadline time.Time
	// uid is the caller's: a directory of the caller's that the walk
	// cannot read, the sandbox could make readable (chmod).
	uid int
}

// Why a walk stopped.
var (
	errWalkLimit = errors.New("too many files")
	errWalkTime  = errors.New("too slow")
)

// explain turns the failure err of the walk of bind b into one line. The line
// names the bind, the count, and how to narrow the rules or the bind.
func (w *ruleWalk) explain(b policy.Bind, patterns []namePattern, err error) error {
	how := fmt.Sprintf("bind a smaller directory, or write the rules as paths (%q rather than %q)", "config/"+patterns[0].pattern, patterns[0].pattern)
	switch {
	case errors.Is(err, errWalkLimit):
		return fileRulesError{fmt.Sprintf("--bind %s: the binds hold more than %d files, too many to find every match of the denyRead name patterns (such as %s): %s", b, ruleWalkLimit, patterns[0].label, how)}
	case errors.Is(err, errWalkTime):
		return fileRulesError{fmt.Sprintf("--bind %s: looking for the denyRead name patterns (such as %s) took more than %s, with %d files looked at: %s", b, patterns[0].label, ruleWalkTimeout, ruleWalkLimit-w.left, how)}
	}
	return fileRulesError{fmt.Sprintf("--bind %s: cannot look for the denyRead name patterns (such as %s): %v (make it readable, or %s)", b, patterns[0].label, err, how)}
}

// matches lists, as sandbox paths, the entries under bind b whose name a
// pattern matches.
//
// Each is labelled by the first pattern that matches. matches does not look
// inside a matching directory. A directory of the caller's that it cannot read
// is listed too, whole, since the sandbox could read it. A command may have
// made it unreadable to hide what it holds from this walk, and overlayfs makes
// its work directories so. It fails when it runs out of entries or time, and
// when the bind itself cannot be read.
func (w *ruleWalk) matches(b policy.Bind, patterns []namePattern) ([]plan.RuledPath, error) {
	var found []plan.RuledPath
	roots := []string{b.Dst}
	if b.Mode == policy.CopyOnWrite {
		roots = []string{b.Src, b.Dst}
	}
	for _, root := range roots {
		if slices.ContainsFunc(kernelFSPaths, func(k string) bool { return pathtree.Within(root, k) }) {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				err = w.unreadable(p, err)
				if err == nil || p == root || d == nil || !d.IsDir() {
					return err
				}
				// A directory of the caller's that the walk cannot read,
				// the sandbox can (its root may override the caller's
				// modes): whatever it holds, it is covered whole.
				rel, rerr := filepath.Rel(root, p)
				if rerr != nil {
					return rerr
				}
				found = append(found, plan.RuledPath{Path: filepath.Join(b.Dst, rel), Dir: true, Rule: patterns[0].label + ", covering a directory boxsh cannot read"})
				return fs.SkipDir
			}
			if w.left--; w.left < 0 {
				return errWalkLimit
			}
			if w.left%4096 == 0 && time.Now().After(w.deadline) {
				return errWalkTime
			}
			if p != root && d.IsDir() && (slices.Contains(ruleWalkSkip, d.Name()) || slices.Contains(kernelFSPaths, p)) {
				return fs.SkipDir
			}
			if p == root || d.Type()&fs.ModeSymlink != 0 {
				return nil
			}
			i := slices.IndexFunc(patterns, func(np namePattern) bool { return matchName(np.pattern, d.Name()) })
			if i < 0 {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			found = append(found, plan.RuledPath{Path: filepath.Join(b.Dst, rel), Dir: d.IsDir(), Rule: patterns[i].label})
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		})
		if err != nil {
			return found, err
		}
	}
	return found, nil
}

// unreadable decides about an entry p that the walk could not read (err).
//
// An entry that went away, or that is not the caller's, is passed over (nil):
// the sandbox, with the caller's uid and no CAP_DAC_OVERRIDE, cannot read it
// either. For one of the caller's, it returns err (see matches).
func (w *ruleWalk) unreadable(p string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	fi, lerr := os.Lstat(p)
	if lerr != nil {
		if errors.Is(lerr, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != w.uid && w.uid != 0 {
		return nil
	}
	return err
}
