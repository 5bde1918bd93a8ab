//go:build !linux

package reap

import "context"

// Reaper reaps the children that were not started through it; here, where
// boxsh-init is never PID 1, it only starts them.
type Reaper struct{}

// New returns a Reaper.
func New() *Reaper { return &Reaper{} }

// Start starts a child with start.
func (r *Reaper) Start(start func() (int, error)) error {
	_, err := start()
	return err
}

// StartEach starts children with start.
func (r *Reaper) StartEach(start func(started func(pid int))) { start(func(int) {}) }

// Forget drops a child recorded by Start.
func (r *Reaper) Forget(pid int) {}

// Run returns when ctx ends.
func (r *Reaper) Run(ctx context.Context) { <-ctx.Done() }

// Reap reaps nothing.
func (r *Reaper) Reap() int { return 0 }
