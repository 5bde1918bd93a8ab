package runtime

import (
	"syscall"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/proc"
)

// adoptOrphans makes the front the child subreaper of everything it starts
// from now on.
//
// If boxsh-init dies, the commands it ran are reparented to the front instead
// of to the system's init, and killOrphans finds them. The Supervisor, which
// relies on it, calls it before it starts the first boxsh-init.
func adoptOrphans(log hclog.Logger) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		log.Warn("cannot become child subreaper; commands may outlive a crashed boxsh-init", "error", err)
	}
}

// killOrphans kills and reaps the processes that were reparented to the
// front (its child subreaper: adoptOrphans) after their boxsh-init died: commands and
// their background processes. Call it when no boxsh-init is running.
func killOrphans(log hclog.Logger) {
	for round := 0; round < 10; round++ {
		kids := proc.Children()
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // its process group, if it leads one
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range kids {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
		log.Debug("killed orphaned processes", "count", len(kids))
	}
}
