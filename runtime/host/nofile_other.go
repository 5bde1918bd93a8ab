//go:build !linux

package host

import "github.com/boxsh/boxsh/runtime/plan"

// startNoFile is nil where a sandbox is not a Linux container: its spec
// is for another machine, whose limits are not known here.
func startNoFile() *plan.Rlimit { return nil }
