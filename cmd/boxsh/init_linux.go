//go:build linux && cgo

package main

import (
	"os"

	"github.com/boxsh/boxsh/internal/front/hostcheck"
	// The container's init, before the front's own packages are
	// initialized (see lcinit).
	_ "github.com/boxsh/boxsh/internal/lcinit"
)

// init runs the probe of the calls a sandbox's start makes (boxsh doctor,
// and the diagnosis of a start that failed) when this program is run
// again for it.
func init() {
	if len(os.Args) == 2 && os.Args[1] == hostcheck.ProbeArg {
		hostcheck.RunProbe()
	}
	hostcheck.ProbeBinary = "/proc/self/exe"
}
