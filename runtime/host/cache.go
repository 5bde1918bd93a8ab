package host

import (
	"path/filepath"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
)

// cacheBind returns the --cache directory of sb as the wr bind of itself that
// it is checked as, and whether sb has one.
//
// The directory is shown at the home's .cache (plan.CacheEnv), not at its own
// place. So neither the protected paths nor the other binds cover anything in
// it. It is checked alone, and refused where a wr bind of it would keep
// something read-only.
func cacheBind(sb policy.Sandbox) (policy.Bind, bool) {
	if sb.Cache == "" {
		return policy.Bind{}, false
	}
	return policy.Bind{Mode: policy.ReadWrite, Src: sb.Cache, Dst: sb.Cache}, true
}

// writableBinds are the binds through which the sandbox sb writes to the
// host: its wr and cow binds, and the --cache directory (cacheBind).
func writableBinds(sb policy.Sandbox) []policy.Bind {
	var out []policy.Bind
	for _, b := range sb.Binds {
		if b.Mode != policy.ReadOnly {
			out = append(out, b)
		}
	}
	if cb, ok := cacheBind(sb); ok {
		out = append(out, cb)
	}
	return out
}

// bindFlag is the flag through which the sandbox sb writes through b, for
// messages: "--cache DIR" for the --cache directory, else "--bind b".
func bindFlag(sb policy.Sandbox, b policy.Bind) string {
	if cb, ok := cacheBind(sb); ok && b == cb {
		return "--cache " + sb.Cache
	}
	return "--bind " + b.String()
}

// cacheSkip are the directories of the --cache directory that the walk of
// checkCache does not look into. They are the module caches that plan.CacheEnv
// puts there, whose modules' files no tool of the host acts on; the walks of
// the binds skip the tool caches (toolCaches) alike.
var cacheSkip = []string{"go-mod", "npm"}

// checkCache refuses a --cache directory that --bind wr: of it would not leave
// writable whole.
//
// It refuses one that:
//
//   - holds or is inside boxsh's configuration directory (configHidden);
//   - is the home itself or a directory holding it;
//   - is a path through a symbolic link (ResolveSandbox resolves the flag's);
//   - holds, or is inside, an entry of the protected list: the entries where
//     they exist, a repository's control files, and the entries whose place in
//     the home is inside it even when missing (GatherProtection).
//
// boxsh's state directory is refused with the binds (stateHidden, through
// writableBinds). extra are the policy's filesystem.protect entries.
func checkCache(sb policy.Sandbox, home string, extra []string) error {
	cb, ok := cacheBind(sb)
	if !ok {
		return nil
	}
	alone := policy.Sandbox{Binds: []policy.Bind{cb}, Cache: sb.Cache}
	if real, err := filepath.EvalSymlinks(sb.Cache); err != nil || real != sb.Cache {
		return policy.BindErrorf("%s is a symbolic link or under one (to %s), which the checks of a wr bind would not follow: give the directory itself", bindFlag(alone, cb), real)
	}
	if filepath.IsAbs(home) && pathtree.Within(filepath.Clean(home), sb.Cache) {
		return policy.BindErrorf("%s would let the sandbox write the home directory %s (its start-up files, ~/.config, ~/.local/bin), which a wr bind keeps read-only: use a directory of its own for the cache", bindFlag(alone, cb), home)
	}
	if err := checkConfigHidden(alone, nil, home); err != nil {
		return err
	}
	g := newGatherer(alone, extra)
	g.noRootPlaceholders = true
	for _, d := range cacheSkip {
		g.skip = append(g.skip, filepath.Join(sb.Cache, d))
	}
	if filepath.IsAbs(home) {
		g.hostHome = filepath.Clean(home)
	}
	if err := g.walk(sb.Cache); err != nil {
		return err
	}
	if g.err != nil {
		return g.err
	}
	if paths := g.finish(); len(paths) > 0 {
		hp := paths[0]
		return policy.BindErrorf("%s would let the sandbox write %s (%s), which a wr bind keeps read-only but the cache, shown at the home's .cache, cannot: use a directory of its own for the cache", bindFlag(alone, cb), hp.Path, hp.Reason)
	}
	return nil
}
