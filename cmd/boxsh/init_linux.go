//go:build linux && cgo

package main

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"

	"github.com/boxsh/boxsh/internal/front/hostcheck"
	// nsenter's constructor sets up the namespaces of a sandbox before the
	// Go runtime starts, in the copy of boxsh that libcontainer runs as
	// "boxsh init".
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// init turns this process into libcontainer's container init when
// libcontainer started it as "boxsh init" (it then never returns: it ends
// by executing the sandbox's first process). The environment variable
// tells it from a script named "init".
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" && os.Getenv("_LIBCONTAINER_INITPIPE") != "" {
		libcontainer.Init()
	}
	// The probe of the calls a sandbox's start makes (boxsh doctor, and
	// the diagnosis of a start that failed) runs this program again.
	if len(os.Args) == 2 && os.Args[1] == hostcheck.ProbeArg {
		hostcheck.RunProbe()
	}
	hostcheck.ProbeBinary = "/proc/self/exe"
}
