//go:build linux && cgo

package main

// extern int boxsh_reaper_dirs;
import "C"

import "github.com/boxsh/boxsh/runtime/host"

// init turns this process into the front's reaper when the reaper's C
// stage (reaper_linux.c) found state directories to clean up after; it
// never returns then.
func init() {
	if C.boxsh_reaper_dirs != 0 {
		host.RunReaper()
	}
}
