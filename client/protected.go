package client

import (
	"strings"

	"github.com/boxsh/boxsh/policy"
)

// protectedExtra are paths that, besides policy.HardDeniedWrites, a
// session never applies: git control files that make git run code or
// point it elsewhere, and the configuration of agents, IDEs and boxsh.
// Names ending in "/" are directories with everything below them.
var protectedExtra = []string{
	".git/config", ".git/hooks/", ".git/info/", ".git/commondir",
	".git/config.worktree", ".git/worktrees/",
	".claude/settings.json", ".claude/settings.local.json",
	".cursor/", ".devcontainer/", ".boxsh/",
}

// protectedPatterns are the protected paths split into components.
var protectedPatterns = func() [][]string {
	var out [][]string
	for _, list := range [][]string{policy.HardDeniedWrites, protectedExtra} {
		for _, p := range list {
			out = append(out, strings.Split(strings.TrimSuffix(p, "/"), "/"))
		}
	}
	return out
}()

// protectedReason tells whether the slash-separated relative path rel is
// protected (a protected path, at any depth, or inside one) and why. A
// gitfile (a non-directory named .git) is protected too; callers that
// know the type check that with isGitfile.
func protectedReason(rel string) (string, bool) {
	comps := strings.Split(rel, "/")
	for i := range comps {
		for _, p := range protectedPatterns {
			if i+len(p) > len(comps) {
				continue
			}
			match := true
			for j, c := range p {
				if comps[i+j] != c {
					match = false
					break
				}
			}
			if match {
				return "protected path " + strings.Join(p, "/") + " (it can make the host run code)", true
			}
		}
	}
	return "", false
}

// isGitfile tells whether rel names a .git that is not a directory: a
// gitfile, which points git at another repository.
func isGitfile(rel string, t FileType) bool {
	return (rel == ".git" || strings.HasSuffix(rel, "/.git")) && t != TypeDir && t != ""
}
