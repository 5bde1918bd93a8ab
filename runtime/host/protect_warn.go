package host

import (
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/policy"
)

// newRepositoriesWarning returns what tells the user on stderr about what a
// command made in the writable binds that boxsh cannot keep read-only (see
// newRepositories).
//
// So the user looks before running git or the tools there.
func newRepositoriesWarning(log hclog.Logger, sb policy.Sandbox, home string, start Protection, since time.Time) func() {
	repos, entries := newRepositories(sb, home, start, since)
	var cow []string
	for _, b := range sb.Binds {
		cow = append(cow, cowProtectedChanges(b)...)
	}
	return func() {
		if len(cow) > 0 {
			log.Warn("the sandbox changed protected paths in a cow DST (not to be applied to SRC; do not run git or the tools there before checking them): " + strings.Join(cow, "; "))
		}
		if len(repos) > 0 {
			log.Warn("the sandbox made git repositories in a writable bind; their configuration and hooks can run programs when you run git there, so check them before: " + strings.Join(repos, "; "))
		}
		if len(entries) > 0 {
			log.Warn("the sandbox made files that tools on this host run programs from; check them before using those tools there: " + strings.Join(entries, "; "))
		}
	}
}
