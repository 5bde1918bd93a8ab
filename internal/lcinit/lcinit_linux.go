//go:build cgo

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
