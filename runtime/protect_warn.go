package runtime

import (
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/policy"
)

// warnNewRepositories tells, on stderr, about the repositories a command
// made in the writable binds (see NewRepositories): boxsh cannot keep
// their configuration read-only, so the user must look before running git
// in them.
func warnNewRepositories(log hclog.Logger, sb policy.Sandbox, home string, before []string) {
	repos := NewRepositories(sb, home, before)
	if len(repos) == 0 {
		return
	}
	log.Warn("the sandbox made git repositories in a writable bind; their configuration and hooks can run programs when you run git there, so check them before: " + strings.Join(repos, "; "))
}
