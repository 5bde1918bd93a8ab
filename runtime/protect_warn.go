package runtime

import (
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/policy"
)

// newRepositoriesWarning looks for the repositories a command made in the
// writable binds (see NewRepositories) and returns what tells the user
// about them on stderr: boxsh cannot keep their configuration read-only,
// so the user must look before running git in them.
func newRepositoriesWarning(log hclog.Logger, sb policy.Sandbox, home string, start Protection, since time.Time) func() {
	repos := NewRepositories(sb, home, start, since)
	if len(repos) == 0 {
		return func() {}
	}
	return func() {
		log.Warn("the sandbox made git repositories in a writable bind; their configuration and hooks can run programs when you run git there, so check them before: " + strings.Join(repos, "; "))
	}
}
