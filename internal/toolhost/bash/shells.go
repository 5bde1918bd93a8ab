package bash

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/boxsh/boxsh/internal/toolhost/reap"
)

// idleShells is how many warm shells wait while the pool is idle. They are the
// next call's, and the one after it, for a call that comes as soon as the
// previous one is answered, before that one's replacement is ready.
const idleShells = 2

// takeShell returns a warm shell for a call. Another is to be started in
// its place: when the call's answer has been delivered if one was ready
// (refillLater; off the call's path, while the client thinks), else at
// once, for this call. Calls that come together thus each wait at most
// for the start of one shell (they could not all run at once anyway: the
// shells would share the processor).
func (p *Pool) takeShell() (s *shell, refillLater bool) {
	select {
	case s := <-p.shells:
		return s, true
	default:
	}
	p.refill()
	select {
	case s := <-p.shells:
		return s, false
	case <-p.done:
		// refill started nothing: take one if one is there.
		select {
		case s := <-p.shells:
			return s, false
		default:
			return &shell{err: errPoolClosed}, false
		}
	}
}

// refill asks for a warm shell for shells, unless the pool is closed.
//
// One goroutine makes the shells: as many as were asked for by then, in one
// exchange with the zygote (up to maxBatch). In a burst of calls, where each
// call asks for one, the zygote and boxsh-init then wake once for several
// shells, and no goroutine is started per shell.
func (p *Pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.wanted++
	if p.refilling {
		return
	}
	p.refilling = true
	p.refills.Add(1)
	go p.refiller()
}

// maxBatch bounds the warm shells made in one exchange with the zygote:
// the first of them is ready only once the zygote has read every request.
const maxBatch = 4

// refiller makes the warm shells asked for, until none is.
func (p *Pool) refiller() {
	defer p.refills.Done()
	for {
		p.mu.Lock()
		n := min(p.wanted, maxBatch)
		if n == 0 || p.closed {
			p.wanted, p.refilling = 0, false
			p.mu.Unlock()
			return
		}
		p.wanted -= n
		p.mu.Unlock()
		for _, s := range p.startWarm(n) {
			p.stock(s)
		}
	}
}

// stock adds warm shell s to the ready ones, or stops it if the pool is
// closed. It never blocks: shells holds idleShells and one for each call
// that may be waiting for one.
func (p *Pool) stock(s *shell) {
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.shells <- s
	}
	p.mu.Unlock()
	if closed {
		s.discard()
	}
}

// shell is a started shell with its pipes.
type shell struct {
	proc           *child
	status         syscall.WaitStatus // set by wait
	waited         bool               // wait has reaped the shell
	ctl            *os.File           // command channel of a warm shell, write end
	stdin          *os.File           // write end; nil when stdin is /dev/null
	stdout, stderr *os.File           // read ends
	// The shell's ends of the pipes, until it has them.
	ctlR, inR, outW, errW *os.File
	err                   error // set when the shell could not be started
	reaper                *reap.Reaper
}

// wait waits for the shell process and tells the reaper it is gone.
func (s *shell) wait() error {
	status, err := s.proc.wait()
	s.status, s.waited = status, err == nil
	s.reaper.Forget(s.proc.pid)
	return err
}

// startShell starts a shell. Failures are recorded in the result.
//
//   - With no command, it is a warm shell waiting for one, cloned from the
//     zygote; with errNoZygote if there is none.
//   - Otherwise it runs `<shell> -c command` in dir (or the pool's directory)
//     with env (or the pool's environment).
//
// Its stdin is a pipe when the call gives stdin, else /dev/null.
func (p *Pool) startShell(c *coldStart) *shell {
	if c == nil {
		return p.startWarm(1)[0]
	}
	return p.newShell(c, func(s *shell) (*child, error) {
		proc, err := p.execShell(s, c)
		if err != nil {
			err = fmt.Errorf("start shell %s: %w", p.opts.Shell, err)
		}
		return proc, err
	})
}

// newShell makes the pipes of a shell for c (nil: a warm shell) and starts it
// with start, through the reaper.
//
// start hands the shell its ends of the pipes. Failures are recorded in the
// result.
func (p *Pool) newShell(c *coldStart, start func(*shell) (*child, error)) *shell {
	s := &shell{reaper: p.opts.Reaper}
	p.makePipes(s, c)
	if s.err != nil {
		return s
	}
	err := s.reaper.Start(func() (int, error) {
		proc, err := start(s)
		if err != nil {
			return 0, err
		}
		s.proc = proc
		return proc.pid, nil
	})
	s.closeShellEnds()
	if err != nil {
		s.closeOurEnds()
		s.err = err
	}
	return s
}

// startWarm starts n warm shells, cloned from the zygote in one exchange
// (shells with errNoZygote if there is none), through the reaper.
// Failures are recorded in the results.
func (p *Pool) startWarm(n int) []*shell {
	shells := make([]*shell, n)
	z := p.zygote.Load()
	if z == nil {
		for i := range shells {
			shells[i] = &shell{err: errNoZygote}
		}
		return shells
	}
	var made []*shell
	for i := range shells {
		s := &shell{reaper: p.opts.Reaper}
		p.makePipes(s, nil)
		shells[i] = s
		if s.err == nil {
			made = append(made, s)
		}
	}
	var failed error
	p.opts.Reaper.StartEach(func(started func(pid int)) {
		failed = z.spawnEach(p.devNull, made, func(s *shell, c *child, err error) {
			if err != nil {
				s.err = err
				return
			}
			s.proc = c
			started(c.pid)
		})
	})
	for _, s := range made {
		s.closeShellEnds()
		if s.err != nil {
			s.closeOurEnds()
		}
	}
	if failed != nil {
		// Those calls start their shells by exec, on fresh pipes: a clone
		// made before the zygote failed to answer may hold the ones it was
		// sent (it finds them closed, and exits).
		p.zygoteFailed(z, failed)
	}
	return shells
}

// makePipes makes the pipes of a shell for c (nil: a warm shell),
// recording a failure in s.err.
func (p *Pool) makePipes(s *shell, c *coldStart) {
	pipe := func(pollRead bool) (r, w *os.File) {
		if s.err != nil {
			return nil, nil
		}
		r, w, s.err = newPipe(pollRead)
		return r, w
	}
	if c == nil {
		s.ctlR, s.ctl = pipe(false)
	} else if c.stdin {
		s.inR, s.stdin = pipe(false)
	}
	s.stdout, s.outW = pipe(true)
	s.stderr, s.errW = pipe(true)
	if s.err != nil {
		s.closeShellEnds()
		s.closeOurEnds()
		s.err = fmt.Errorf("start shell: %w", s.err)
	}
}

// closeShellEnds closes the pipe ends the shell was given, once it has
// them (or could not be started).
func (s *shell) closeShellEnds() {
	closeFiles(s.ctlR, s.inR, s.outW, s.errW)
	s.ctlR, s.inR, s.outW, s.errW = nil, nil, nil, nil
}

// closeOurEnds closes the pool's ends of the pipes of a shell that could
// not be started.
func (s *shell) closeOurEnds() {
	closeFiles(s.ctl, s.stdin, s.stdout, s.stderr)
	s.ctl, s.stdin, s.stdout, s.stderr = nil, nil, nil, nil
}

func closeFiles(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}

// shellArgv is the command line that runs script in the pool's shell,
// under the pool's limits.
func (p *Pool) shellArgv(script string) []string {
	return p.opts.Limits.Wrap(p.opts.LimitsExe, []string{p.opts.Shell, "-c", script})
}

// execShell starts the cold start c by exec, with stdin s.inR (nil:
// /dev/null).
func (p *Pool) execShell(s *shell, c *coldStart) (*child, error) {
	argv := p.shellArgv(c.command)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = p.opts.Env, p.opts.Dir
	if c.env != nil {
		cmd.Env = c.env
	}
	if c.dir != "" {
		cmd.Dir = c.dir
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.devNull, s.outW, s.errW
	if s.inR != nil {
		cmd.Stdin = s.inR
	}
	cmd.SysProcAttr = procAttr()
	// The shell is waited for through its Process: with files for all its
	// streams, exec.Cmd's own Wait has nothing more to do.
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch, err := execChild(cmd.Process)
	if err != nil {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		return nil, err
	}
	return ch, nil
}

// coldStart describes a call that needs a shell of its own making.
type coldStart struct {
	command string
	dir     string
	env     []string
	stdin   bool // give the shell a pipe as stdin
}

// discard stops an unused warm shell.
func (s *shell) discard() {
	if s.err != nil {
		return
	}
	_ = syscall.Kill(-s.proc.pid, syscall.SIGKILL)
	_ = s.ctl.Close()
	_ = s.stdout.Close()
	_ = s.stderr.Close()
	_ = s.wait()
}
