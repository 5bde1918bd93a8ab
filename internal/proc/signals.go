package proc

import (
	"os"
	"os/signal"
	"syscall"
)

// HandleStopSignals calls stop with the first SIGTERM, SIGINT or SIGHUP
// the process gets, and has it ignore SIGPIPE (a peer that closed its end
// gives EPIPE instead of killing the process). It returns at once, with a
// channel that is closed once both are in place: the set-up runs on a
// goroutine, because the process's first signal.Notify starts a thread,
// which would otherwise come before the rest of a start. Wait for the channel before serving.
func HandleStopSignals(stop func(os.Signal)) <-chan struct{} {
	return handleStop(stop, nil)
}

// HandleStopSignalsButHUP is HandleStopSignals for SIGTERM and SIGINT: a
// SIGHUP goes to hup instead (a reload of the caller's settings).
func HandleStopSignalsButHUP(stop func(os.Signal), hup chan<- os.Signal) <-chan struct{} {
	return handleStop(stop, hup)
}

func handleStop(stop func(os.Signal), hup chan<- os.Signal) <-chan struct{} {
	set := make(chan struct{})
	go func() {
		sigs := make(chan os.Signal, 1)
		if hup != nil {
			signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
			signal.Notify(hup, syscall.SIGHUP)
		} else {
			signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		}
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
		close(set)
		stop(<-sigs)
	}()
	return set
}
