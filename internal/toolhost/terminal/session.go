package terminal

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/boxsh/boxsh/internal/toolhost/vt"
	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/toolhost/reap"
)

// session is one command on its pseudo-terminal.
type session struct {
	id      string
	command string
	cols    int
	rows    int
	seq     uint64 // creation order; set by the Manager before it is shared
	cmd     *exec.Cmd
	pid     int
	reaper  *reap.Reaper
	pty     *os.File // the master side
	log     hclog.Logger

	readerDone chan struct{} // closed when readLoop returns
	done       chan struct{} // closed when the process is reaped and exited is set
	writeMu    sync.Mutex    // serializes writes of input
	closeOnce  sync.Once

	mu       sync.Mutex
	screen   *vt.Terminal
	reads    uint64        // number of reads from the terminal
	seen     uint64        // reads at the last snapshot
	changed  chan struct{} // closed, and replaced, on every new output and on exit
	exited   bool
	exitCode int
}

func newSession(id, command string, cols, rows int, cmd *exec.Cmd, f *os.File, log hclog.Logger) *session {
	return &session{
		id:         id,
		command:    command,
		cols:       cols,
		rows:       rows,
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		pty:        f,
		log:        log.With("id", id),
		readerDone: make(chan struct{}),
		done:       make(chan struct{}),
		screen:     vt.New(cols, rows, ScrollbackLines),
		changed:    make(chan struct{}),
	}
}

// notifyLocked wakes the goroutines waiting for a change. s.mu must be held.
func (s *session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// readLoop feeds what the program writes to the terminal into the emulator,
// until the terminal is closed on either side.
func (s *session) readLoop() {
	defer close(s.readerDone)
	buf := make([]byte, 32*1024)
	for {
		n, err := s.pty.Read(buf)
		if n > 0 {
			s.mu.Lock()
			_, _ = s.screen.Write(buf[:n])
			response := s.screen.TakeResponse()
			s.reads++
			s.notifyLocked()
			s.mu.Unlock()
			if len(response) > 0 {
				// Answer the program's queries (cursor position, device
				// attributes) as a terminal would.
				_, _ = s.pty.Write(response)
			}
		}
		if err != nil {
			// EIO: every process closed the terminal; ErrClosed: the session
			// was killed.
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				s.log.Warn("terminal read failed", "error", err)
			}
			return
		}
	}
}

// waitLoop reaps the process, lets the reader take in its last output and
// marks the session exited.
func (s *session) waitLoop() {
	err := s.cmd.Wait()
	s.reaper.Forget(s.cmd.Process.Pid)
	code := proc.ExitStatus(s.cmd.ProcessState)
	if s.cmd.ProcessState == nil {
		s.log.Warn("waiting for terminal process failed", "error", err)
	}

	// The reader normally ends right away, when the terminal reports that
	// its last user is gone. A background process can keep the terminal
	// open, so give up once its output pauses.
	limit := time.NewTimer(drainMax)
	defer limit.Stop()
	quiet := time.NewTimer(drainQuiet)
	defer quiet.Stop()
drain:
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		quiet.Reset(drainQuiet)
		select {
		case <-s.readerDone:
			break drain
		case <-changed:
		case <-quiet.C:
			break drain
		case <-limit.C:
			break drain
		}
	}

	s.mu.Lock()
	s.exited = true
	s.exitCode = code
	s.notifyLocked()
	s.mu.Unlock()
	s.log.Debug("terminal process exited", "pid", s.pid, "exit_code", code)
	close(s.done)
}

// hasExited reports whether the process has exited.
func (s *session) hasExited() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exited
}

// waitOutput waits up to outputWait for output newer than the last snapshot,
// or for the process to exit.
//
// Once output arrives, it waits on until the output pauses for settleQuiet,
// within the same bound.
func (s *session) waitOutput(ctx context.Context) error {
	deadline := time.NewTimer(outputWait)
	defer deadline.Stop()

	// Wait for something new.
	for {
		s.mu.Lock()
		news := s.reads != s.seen || s.exited
		changed := s.changed
		s.mu.Unlock()
		if news {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	// Wait for the output to settle.
	quiet := time.NewTimer(settleQuiet)
	defer quiet.Stop()
	for {
		s.mu.Lock()
		exited := s.exited
		changed := s.changed
		s.mu.Unlock()
		if exited {
			return nil
		}
		quiet.Reset(settleQuiet)
		select {
		case <-changed:
		case <-quiet.C:
			return nil
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitQuiet waits until the first of these:
//
//   - no output has arrived for settleQuiet, counted from the call;
//   - streamSettle has passed after the first output that arrived while it
//     waited;
//   - the process has exited.
func (s *session) waitQuiet(ctx context.Context) error {
	quiet := time.NewTimer(settleQuiet)
	defer quiet.Stop()
	var limit <-chan time.Time // set once output arrives
	s.mu.Lock()
	reads := s.reads
	s.mu.Unlock()
	for {
		s.mu.Lock()
		exited := s.exited
		changed := s.changed
		news := s.reads != reads
		reads = s.reads
		s.mu.Unlock()
		if exited {
			return nil
		}
		if news {
			if limit == nil {
				t := time.NewTimer(streamSettle)
				defer t.Stop()
				limit = t.C
			}
			quiet.Reset(settleQuiet)
		}
		select {
		case <-changed:
		case <-quiet.C:
			return nil
		case <-limit:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// snapshot reports the session's state and marks its output as seen.
func (s *session) snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = s.reads
	snap := Snapshot{Output: s.screen.String(), Exited: s.exited}
	if s.exited {
		code := s.exitCode
		snap.ExitCode = &code
	}
	return snap
}

// write sends text to the program's input. It gives up when ctx is done or
// after writeTimeout, where the terminal supports deadlines.
func (s *session) write(ctx context.Context, text string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	deadline := time.Now().Add(writeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// Without deadline support (not every platform's terminals can be
	// polled) the write simply blocks.
	if err := s.pty.SetWriteDeadline(deadline); err == nil {
		stop := context.AfterFunc(ctx, func() { _ = s.pty.SetWriteDeadline(time.Now()) })
		defer func() {
			stop()
			_ = s.pty.SetWriteDeadline(time.Time{})
		}()
	}
	if _, err := io.WriteString(s.pty, text); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			return ctxErr
		}
		return err
	}
	return nil
}

// signal sends sig to the session's process group.
//
// It does not once the process has been reaped and nothing holds the terminal
// any more: the group is then gone, and its id might already be reused.
func (s *session) signal(sig syscall.Signal) {
	if s.finished() {
		return
	}
	if err := syscall.Kill(-s.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		s.log.Warn("signalling terminal process group failed", "pid", s.pid, "signal", sig, "error", err)
	}
}

// terminate sends sig to the session's process group, and waits for the
// process to exit and the terminal to be released.
//
// It waits up to grace, less if ctx is done. If either has not happened by
// then, it kills the group. Finally it releases the terminal.
func (s *session) terminate(ctx context.Context, sig syscall.Signal, grace time.Duration) {
	s.signal(sig)
	if sig != syscall.SIGKILL && !s.finished() {
		t := time.NewTimer(grace)
		done := false
		for !done {
			// Wait for the process, then for the terminal.
			ch := s.done
			select {
			case <-s.done:
				ch = s.readerDone
			default:
			}
			select {
			case <-ch:
				done = s.finished()
			case <-t.C:
				done = true
			case <-ctx.Done():
				done = true
			}
		}
		t.Stop()
	}
	if !s.finished() {
		s.signal(syscall.SIGKILL)
	}
	// Once the process is reaped, waitLoop has also collected its last
	// output.
	t := time.NewTimer(reapTimeout)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.log.Warn("terminal process not reaped after SIGKILL", "pid", s.pid)
	}
	// A process outside the group (a job of an interactive shell) may still
	// hold the terminal: closing the master hangs it up.
	s.close()
}

// finished reports whether the process has been reaped and nothing holds the
// terminal any more.
func (s *session) finished() bool {
	select {
	case <-s.done:
	default:
		return false
	}
	select {
	case <-s.readerDone:
		return true
	default:
		return false
	}
}

// close releases the master side of the terminal and waits a little for the
// reader to end. (Where the terminal cannot be polled, a blocked read only
// ends when the last process holding the terminal exits.)
func (s *session) close() {
	s.closeOnce.Do(func() {
		if err := s.pty.Close(); err != nil {
			s.log.Warn("closing terminal failed", "error", err)
		}
	})
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-s.readerDone:
	case <-t.C:
	}
}
