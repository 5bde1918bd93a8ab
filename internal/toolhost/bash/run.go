package bash

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxsh/boxsh/internal/drain"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/tool"
)

// MaxStream is the default cap on each of stdout and stderr (10 MiB).
const MaxStream = 10 << 20

// drainGrace is how long output is still collected after the shell exits, for
// data already in flight. Background processes that keep the pipes open do not
// hold the answer up beyond it.
const drainGrace = 50 * time.Millisecond

// reapGrace bounds how long a killed call's answer waits for the rest of
// its process group to die and be reaped.
const reapGrace = 2 * time.Second

// awaitGroupGone waits, at most grace, until process group pgid has no
// member left, dead or alive. A killed call's processes count against the
// sandbox's process limit until they are reaped; answering first would let
// the next call fail to fork (a fork bomb's hundreds of processes take a
// while to die on a loaded machine).
func awaitGroupGone(pgid int, grace time.Duration) {
	deadline := time.Now().Add(grace)
	for pause := 100 * time.Microsecond; syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline); pause = min(2*pause, 10*time.Millisecond) {
		time.Sleep(pause)
	}
}

// Run runs one bash call on the ticket's worker, waiting for the worker first.
//
// A nil ticket takes a place in line now. Cancelling ctx kills the command's
// process group; the returned output then reports what was collected so far.
func (p *Pool) Run(ctx context.Context, t *Ticket, args tool.BashArgs) (tool.BashOutput, error) {
	out, release, err := p.RunHold(ctx, t, args)
	release()
	return out, err
}

// RunHold is Run, except that the worker stays taken until release is called.
// release is never nil.
//
// A caller that hands the output on, to a client that may read slowly,
// releases the worker once the output is delivered. So results for a stalled
// client cannot pile up.
func (p *Pool) RunHold(ctx context.Context, t *Ticket, args tool.BashArgs) (out tool.BashOutput, release func(), err error) {
	release = func() {}
	if t == nil {
		t = p.Reserve()
	}
	if args.Args != nil {
		if args.Command, err = argvCommand(args.Args); err != nil {
			p.abandon(t)
			return out, release, err
		}
	}
	if args.Cwd != "" {
		fi, err := os.Stat(args.Cwd)
		if err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
		if err != nil {
			p.abandon(t)
			return out, release, fmt.Errorf("cwd %s: %s", args.Cwd, tool.ErrorText(err))
		}
	}
	w, err := p.acquire(ctx, t)
	if err != nil {
		return out, release, err
	}
	if t.started != nil {
		t.started()
	}
	warm, refillLater := p.takeShell()
	if refillLater && p.queued() {
		// Calls wait for a worker (a burst): the next one to start takes
		// a shell now, so its replacement is made at once, not when this
		// call is answered: the next call then finds one ready.
		p.refill()
		refillLater = false
	}
	release = sync.OnceFunc(func() {
		if refillLater {
			p.refill()
		}
		for range p.short.Swap(0) {
			p.refill()
		}
		p.release(w)
	})
	if errors.Is(warm.err, errPoolClosed) {
		return out, release, warm.err
	}
	out, err = p.runOn(ctx, warm, args)
	return out, release, err
}

// runOn runs a call, on a worker the caller holds, in warm shell warm
// (or in a shell of its own, see coldStart).
func (p *Pool) runOn(ctx context.Context, warm *shell, args tool.BashArgs) (tool.BashOutput, error) {
	start := time.Now()
	s := warm
	// pending is a command longer than pipeAtomic, written once the call's
	// timeout and cancellation hold: a stopped shell would block the write.
	var pending []byte
	if args.Cwd != "" || len(args.Env) > 0 || args.Stdin != "" || !p.warmAccepts(warm, args.Command) {
		warm.discard()
		s = p.startShell(&coldStart{command: args.Command, dir: args.Cwd, env: p.env(args.Env), stdin: args.Stdin != ""})
		if s.err != nil {
			return tool.BashOutput{}, s.err
		}
	} else if pending = p.message(args.Command); len(pending) <= pipeAtomic {
		_, err := s.ctl.Write(pending)
		pending = nil
		if err != nil {
			// The warm shell is gone (killed from outside): start one now.
			warm.discard()
			s = p.startShell(&coldStart{command: args.Command})
			if s.err != nil {
				return tool.BashOutput{}, s.err
			}
		}
	}
	if s.ctl != nil && pending == nil {
		_ = s.ctl.Close()
	}
	return p.run(ctx, s, args, start, pending)
}

// pipeAtomic is what an empty pipe always takes without blocking.
const pipeAtomic = 4096

// warmAccepts tells whether warm shell s can run command.
//
// It cannot when it could not be made, nor for commands with a NUL byte, which
// no shell argument can hold. exec refuses those, and so does the shell
// started for them.
func (p *Pool) warmAccepts(s *shell, command string) bool {
	return s.err == nil && strings.IndexByte(command, 0) < 0
}

// message is what hands command to a warm shell: its length (4 bytes,
// native order) and the command.
func (p *Pool) message(command string) []byte {
	b := binary.NativeEndian.AppendUint32(make([]byte, 0, 4+len(command)), uint32(len(command)))
	return append(b, command...)
}

// run runs the call on started shell s and collects its output; pending,
// if any, is the command still to be written to the shell's command pipe.
func (p *Pool) run(ctx context.Context, s *shell, args tool.BashArgs, start time.Time, pending []byte) (tool.BashOutput, error) {
	pgid := s.proc.pid
	p.mu.Lock()
	closed := p.closed
	if closed && pending != nil {
		// The shell never got the command: the call did not run.
		p.mu.Unlock()
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = s.wait()
		closeFiles(s.stdout, s.stderr, s.stdin)
		_ = s.ctl.Close()
		return tool.BashOutput{}, errors.New("bash: pool closed")
	}
	p.running[pgid] = struct{}{}
	p.mu.Unlock()
	defer p.finished(pgid)
	if closed {
		// The command runs already (its shell was given it before the
		// pool closed): it is killed, as Close kills the running ones.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}

	if s.stdin != nil {
		go func() {
			_, _ = io.WriteString(s.stdin, args.Stdin)
			_ = s.stdin.Close()
		}()
	}
	if pending != nil {
		// Killing the shell (timeout, cancellation, Close) ends the write.
		go func() {
			_, _ = s.ctl.Write(pending)
			_ = s.ctl.Close()
		}()
	}

	stdout := &capped{max: p.opts.MaxStream}
	stderr := &capped{max: p.opts.MaxStream}
	var drained sync.WaitGroup
	drained.Add(2)
	go func() { defer drained.Done(); stdout.readFrom(counted(ctx, drain.Reader(s.stdout))) }()
	go func() { defer drained.Done(); stderr.readFrom(counted(ctx, drain.Reader(s.stderr))) }()

	var timeout <-chan time.Time
	if args.Timeout > 0 {
		t := time.NewTimer(SecondsDuration(args.Timeout))
		defer t.Stop()
		timeout = t.C
	}
	waited := make(chan error, 1)
	go func() { waited <- s.wait() }()

	var timedOut, cancelled bool
	select {
	case <-waited:
	case <-timeout:
		timedOut = true
	case <-ctx.Done():
		cancelled = true
	}
	if timedOut || cancelled {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
		awaitGroupGone(pgid, reapGrace)
	}
	// Collect what is already in the pipes (drain.Reader takes it even
	// when the deadline passes first); do not wait for background
	// processes that inherited them.
	deadline := time.Now().Add(p.drainGrace)
	_ = s.stdout.SetReadDeadline(deadline)
	_ = s.stderr.SetReadDeadline(deadline)
	drained.Wait()
	_ = s.stdout.Close()
	_ = s.stderr.Close()

	out := tool.BashOutput{
		Stdout:          stdout.String(),
		Stderr:          stderr.String(),
		StdoutTruncated: stdout.truncated,
		StderrTruncated: stderr.truncated,
		DurationMS:      time.Since(start).Milliseconds(),
	}
	switch {
	case timedOut:
		out.ExitCode, out.Stderr = -1, "timeout"
		return out, nil
	case cancelled:
		return out, ctx.Err()
	}
	out.ExitCode, out.Signal = exitStatus(s.status, s.waited)
	return out, nil
}

// finished records the end of the call whose shell led process group pgid.
//
// The group is remembered if background processes still belong to it. Groups
// remembered before are forgotten once empty.
func (p *Pool) finished(pgid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, pgid)
	if syscall.Kill(-pgid, 0) == nil {
		p.lingering[pgid] = struct{}{}
	}
	for g := range p.lingering {
		if g != pgid && syscall.Kill(-g, 0) != nil {
			delete(p.lingering, g)
		}
	}
}

// exitStatus maps a wait status to the shell's convention: the exit
// status, or 128+N for death by signal N; -1 when the shell was not
// waited for.
func exitStatus(ws syscall.WaitStatus, waited bool) (int, string) {
	if !waited {
		return -1, ""
	}
	if ws.Signaled() {
		return proc.WaitStatus(ws), signalName(ws.Signal())
	}
	return proc.WaitStatus(ws), ""
}

// env merges the call's variables over the base environment.
func (p *Pool) env(extra map[string]string) []string { return MergeEnv(p.opts.Env, extra) }

// MergeEnv returns env with extra's variables set, replacing env's of the same
// name.
//
// They come in sorted order after env's. When extra is empty, it returns env
// itself.
func MergeEnv(env []string, extra map[string]string) []string {
	if len(extra) == 0 {
		return env
	}
	out := make([]string, 0, len(env)+len(extra))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := extra[k]; !ok {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// capped collects a stream up to a limit, and drains the rest.
type capped struct {
	bytes.Buffer
	max       int
	truncated bool
}

func (c *capped) readFrom(r io.Reader) {
	// Read straight into the buffer's memory, then drain what is over the
	// cap.
	n, err := c.ReadFrom(io.LimitReader(r, int64(c.max)))
	if err == nil && n == int64(c.max) {
		if extra, _ := io.Copy(io.Discard, r); extra > 0 {
			c.truncated = true
		}
	}
}

// SecondsDuration converts a timeout in seconds to a Duration, clamping what a
// Duration cannot hold.
//
// Timeouts of 1e10 s and more (about 292 years) become the longest Duration,
// rather than overflowing into a timeout that fires at once.
func SecondsDuration(s float64) time.Duration {
	const max = float64(math.MaxInt64) / float64(time.Second)
	if s >= max || math.IsNaN(s) {
		return math.MaxInt64
	}
	return time.Duration(s * float64(time.Second))
}
