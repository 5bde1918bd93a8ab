// Package forkthread starts child processes from one thread that lives as
// long as the program, so that their parent-death signal fires only when the
// program dies.
//
// The parent-death signal (SysProcAttr.Pdeathsig) fires when the thread that
// forked the child exits, not the process. A Go thread exits when a goroutine
// locked to it (runtime.LockOSThread) returns without unlocking, and any
// goroutine may lock whichever thread it runs on. A child forked from the
// thread of Run, which is locked and never unlocked, loses its parent only
// with the program.
package forkthread

import (
	"runtime"
	"sync"
)

// forker runs functions on the thread children are forked from.
var forker struct {
	once sync.Once
	jobs chan func()
}

// Run runs f on a thread locked for the life of the program and returns
// its error; f is typically an exec.Cmd's Start.
func Run(f func() error) error {
	forker.once.Do(func() {
		forker.jobs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked
			for job := range forker.jobs {
				job()
			}
		}()
	})
	done := make(chan error, 1)
	forker.jobs <- func() { done <- f() }
	return <-done
}
