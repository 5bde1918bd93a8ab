//go:build !linux

package runtime

import (
	"context"

	"github.com/boxsh/boxsh/internal/tool"
)

// frontRoot is the front's way into a sandbox's file system; only Linux has
// one (a Seatbelt sandbox's reads are all boxsh-init's).
type frontRoot struct{}

func (*frontRoot) read(context.Context, tool.ReadArgs, ReadQuickFunc) (tool.Result, bool) {
	return tool.Result{}, false
}

func (*frontRoot) close() {}

// newPlainFrontRoot is nil: only Linux's front serves reads.
func newPlainFrontRoot(int) *frontRoot { return nil }
