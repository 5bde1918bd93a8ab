package runtime

import (
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/proc"
)

// killOrphans kills and reaps the processes that were reparented to the
// front (its child subreaper) after their boxsh-init died: commands and
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
