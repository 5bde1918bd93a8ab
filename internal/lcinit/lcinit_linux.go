//go:build cgo

// Package lcinit turns the process into libcontainer's container init when
// libcontainer started it as "boxsh init".
//
// Its init function runs as soon as libcontainer's packages are
// initialized: Go initializes a package once its imports are, so the
// front's other packages (the server, the tools, the fleet) are not
// initialized in the container's init, which only sets the sandbox up and
// executes boxsh-init.
package lcinit

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"
	// nsenter's constructor sets up the namespaces of a sandbox before the
	// Go runtime starts, in the copy of boxsh that libcontainer runs as
	// "boxsh init".
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// init never returns in the container's init: it ends by executing the
// sandbox's first process. The environment variable tells it from a
// script named "init".
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" && os.Getenv("_LIBCONTAINER_INITPIPE") != "" {
		libcontainer.Init()
	}
}
