package session

import (
	"path/filepath"

	"github.com/boxsh/boxsh/policy"
)

// protectedReason tells whether the slash-separated path rel of SRC, the host
// directory src, is protected, and why.
//
// It applies policy.IsProtectedAt: the protected list at any depth and by
// where rel is on the host, git control files, a new or replaced .git, and the
// extra entries.
func protectedReason(src, rel string, extra []string) (string, bool) {
	reason, ok := policy.IsProtectedAt(filepath.ToSlash(src), rel, extra...)
	if ok {
		reason = "protected path " + reason
	}
	return reason, ok
}
