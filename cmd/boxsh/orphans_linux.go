package main

import (
	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// adoptOrphans makes the front the child subreaper of everything it starts:
// if boxsh-init dies, the commands it ran are reparented to the front
// (instead of to the system's init), which kills them when it restarts
// boxsh-init or exits (see runtime.Supervisor).
func adoptOrphans(log hclog.Logger) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		log.Warn("cannot become child subreaper; commands may outlive a crashed boxsh-init", "error", err)
	}
}
