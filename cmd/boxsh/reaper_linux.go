//go:build linux && cgo

package main

import (
	"os"

	"github.com/boxsh/boxsh/runtime/host"
)

// init turns this process into the front's reaper when the front started
// it as one (see host.StartReaper); it never returns then.
func init() {
	if os.Getenv(host.ReaperEnv) != "" && len(os.Args) == 1 && os.Args[0] == "boxsh-reaper" {
		host.RunReaper()
	}
}
