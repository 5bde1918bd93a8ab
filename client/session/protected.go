package session

import "github.com/boxsh/boxsh/policy"

// protectedReason tells whether the slash-separated relative path rel is
// protected (policy.IsProtected: the protected list, at any depth, git
// control files, a new or replaced .git, and the extra entries) and why.
func protectedReason(rel string, extra []string) (string, bool) {
	reason, ok := policy.IsProtected(rel, extra...)
	if ok {
		reason = "protected path " + reason
	}
	return reason, ok
}
