package bash

import (
	"errors"
	"time"
)

// zygoteFDEnv names the zygote's socket in its environment (see
// zygote/zygote.c).
const zygoteFDEnv = "BOXSH_ZYGOTE_FD"

// errNoZygote stands for a warm shell while there is no zygote: the call
// starts a shell by exec.
var errNoZygote = errors.New("no fork server")

// startZygote starts the zygote from which warm shells are cloned. A
// zygote that cannot start leaves the pool starting shells by exec.
func (p *Pool) startZygote() error {
	z, err := startZygote(p.opts.ForkServer, p.opts.Shell, p.opts.Limits, p.opts.Env, p.opts.Dir, p.devNull, p.opts.Reaper)
	if err != nil {
		return err
	}
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.zygote.Store(z)
	}
	p.mu.Unlock()
	if closed {
		z.close()
	}
	return nil
}

// zygoteFailed gives up zygote z, which could not clone a shell (killed
// by a command, say), and starts a new one a little later.
func (p *Pool) zygoteFailed(z *zygote, err error) {
	if !p.zygote.CompareAndSwap(z, nil) {
		return
	}
	p.opts.Log.Warn("fork server failed; restarting it", "error", err)
	go z.close()
	p.restartZygote(zygoteRestartDelay)
}

// restartZygote starts a new zygote after delay, and tries again, later
// each time, while that fails.
func (p *Pool) restartZygote(delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.zygoteRestart = time.AfterFunc(delay, func() {
		if err := p.startZygote(); err != nil {
			next := min(2*delay, maxZygoteRestartDelay)
			p.opts.Log.Warn("fork server did not start; trying again", "error", err, "in", next)
			p.restartZygote(next)
		}
	})
}

// stopZygote stops the zygote, if any.
func (p *Pool) stopZygote() {
	if z := p.zygote.Swap(nil); z != nil {
		z.close()
	}
}

// Delays before a new zygote is started after one failed, doubling while
// starting fails; meanwhile shells start by exec.
const (
	zygoteRestartDelay    = time.Second
	maxZygoteRestartDelay = time.Minute
)
