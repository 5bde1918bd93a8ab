package plan

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
)

// privateHome returns where the sandbox sb gets a tmpfs of its own, or "" for
// none.
//
// That is its home directory, when no bind shows it or a directory above it,
// and it is not a system directory. Binds inside the home are mounted on the
// tmpfs.
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

// CacheEnv adds to env the variables that put the tools' caches in the --cache
// directory of a sandbox whose home is home.
//
// It adds only those env does not set already: XDG_CACHE_HOME, Go's build
// cache (GOCACHE) and module cache (GOMODCACHE), and npm's cache
// (npm_config_cache). pip, yarn and others use XDG_CACHE_HOME.
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
