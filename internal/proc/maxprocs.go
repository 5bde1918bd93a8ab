package proc

import (
	"os"
	"runtime"
)

// ReserveProcs raises GOMAXPROCS by n, for the goroutines of the process
// that sit in blocking system calls: reads of a blocking stdin, waits for
// child processes.
//
// Such a goroutine keeps its P (the Go scheduler's processor) until the
// runtime's monitor takes it back. With only as many Ps as cores, all of
// them can be held that way at once. A goroutine woken by the network
// poller, such as the answer on the channel socket, then waits for the
// monitor, which delays the sandbox's start (see docs/perf.md). Spare Ps
// cost nothing while idle. A GOMAXPROCS set in the environment is left as
// it is.
func ReserveProcs(n int) {
	if n <= 0 || os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + n)
}

// OneProc sets GOMAXPROCS to 1. A GOMAXPROCS set in the environment is left as
// it is.
//
// It is for a process whose goroutines never sit in blocking system calls, and
// whose work is light beside what the others do on the other cores. Such
// processes are boxsh-init's tool server, and the front once it serves HTTP,
// or stdio with a stdin read through the poller (PollableInput).
//
// With idle Ps, every goroutine made ready wakes another thread that spins,
// looking for work, on the cores the client, boxsh-init and the commands need.
// Such goroutines are a reply from boxsh-init, or the several that net/http
// makes per request. One P lowers the front's processor time and context
// switches per pipelined call, and the HTTP round trip's excess over stdio.
// After a burst of work, a Go process also keeps runtime metadata that grows
// with the Ps that ran it: per-P caches, the collector's parallel marking.
// docs/perf.md has the figures.
func OneProc() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(1)
}
