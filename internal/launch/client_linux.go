package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/forkthread"
)

// destroyedWait bounds the front's wait for the launcher's OpDestroyed (its
// own kill of the sandbox takes up to destroyWait) before it kills the
// launcher.
const destroyedWait = destroyWait + 5*time.Second

// unstartedWait bounds the wait for a launcher that started no sandbox to
// end at its socket's end.
const unstartedWait = 2 * time.Second

// Launcher is a running boxsh-launch, on the front's side.
type Launcher struct {
	path string
	cmd  *exec.Cmd
	conn *conn

	replies chan *Message
	// done is closed when the launcher has exited and been waited for;
	// died is then its end, as an error naming it.
	done chan struct{}
	died error

	exited     chan struct{}
	status     int
	waitErr    error
	exitedOnce sync.Once
	// copies are the copies of non-file standard streams, which end
	// before exited is closed.
	copies sync.WaitGroup
	// stdin is the front's end of a pipe for a stdin that is no file.
	stdin *os.File

	mu      sync.Mutex
	started bool // OpStart sent
	destroy sync.Once
}

// Process is the sandbox's first process and its standard streams, on the
// front's side. A stream that is an *os.File is handed to the launcher as it
// is; another is copied through a pipe; nil is /dev/null.
type Process struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Console is the child end of a socket pair on which the sandbox's
	// terminal is sent (then the streams are not used).
	Console *os.File
	// ExtraFiles are the process's descriptors from 3 on.
	ExtraFiles []*os.File
}

// Start starts the launcher at path, with its stderr (its log, and the
// libcontainer init's) to stderr.
//
// It returns as soon as the launcher runs: its Go start overlaps with the
// front's work until StartSandbox.
func Start(path string, stderr io.Writer) (*Launcher, error) {
	parent, child, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer child.Close()
	cmd := exec.Command(path)
	cmd.ExtraFiles = []*os.File{child} // ConnFD
	sealed, own := sharedCopy(path), false
	if sealed == nil {
		sealed, own = preparedCopy(path), true
	}
	if sealed != nil {
		// The launcher runs from the front's sealed copy: libcontainer
		// makes none, nor does the launcher (sealedEnv). It settles on
		// the file copied (DiskFD), if unchanged.
		cmd.Path = "/proc/self/fd/" + strconv.Itoa(int(sealed.copy.Fd()))
		cmd.Env = append(os.Environ(), sealedEnv+"="+sealed.stamp)
		cmd.ExtraFiles = append(cmd.ExtraFiles, sealed.src)
		if own {
			// The running launcher holds its copy; the front needs
			// none.
			defer sealed.Close()
		}
	}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := forkthread.Run(cmd.Start); err != nil {
		parent.Close()
		return nil, fmt.Errorf("start the sandbox's launcher: %w", err)
	}
	c, err := newConn(parent)
	parent.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	l := &Launcher{
		path:    path,
		cmd:     cmd,
		conn:    c,
		replies: make(chan *Message, 4),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	go l.read()
	return l, nil
}

// Path is the launcher's executable.
func (l *Launcher) Path() string { return l.path }

// read dispatches the launcher's messages until its end.
func (l *Launcher) read() {
	var protoErr error
	for {
		m, files, err := l.conn.recv()
		closeAll(files)
		if err != nil {
			if err != io.EOF {
				protoErr = err
			}
			break
		}
		if m.Op == OpExited {
			code, werr := m.Status, error(nil)
			if m.Error != "" {
				werr = errors.New(m.Error)
			}
			l.setExited(code, werr)
			continue
		}
		select {
		case l.replies <- m:
		default:
			protoErr = fmt.Errorf("%w: unasked %q", errMalformed, m.Op)
		}
		if protoErr != nil {
			break
		}
	}
	if protoErr != nil {
		_ = l.cmd.Process.Kill()
	}
	l.conn.Close()
	werr := l.cmd.Wait()
	switch {
	case protoErr != nil:
		l.died = fmt.Errorf("the sandbox's launcher %s broke the protocol: %w", l.path, protoErr)
	case werr != nil:
		l.died = fmt.Errorf("the sandbox's launcher %s died: %w", l.path, werr)
	default:
		l.died = fmt.Errorf("the sandbox's launcher %s ended", l.path)
	}
	close(l.done)
	l.setExited(1, l.died)
}

// setExited records the first process's exit, once, after the copies of its
// output.
func (l *Launcher) setExited(code int, err error) {
	l.exitedOnce.Do(func() {
		go func() {
			l.copies.Wait()
			l.status, l.waitErr = code, err
			if l.stdin != nil {
				l.stdin.Close()
			}
			close(l.exited)
		}()
	})
}

// reply waits for the launcher's answer, which must be op.
func (l *Launcher) reply(op string) (*Message, error) {
	select {
	case m := <-l.replies:
		return check(m, op)
	case <-l.done:
		select {
		case m := <-l.replies:
			return check(m, op)
		default:
		}
		return nil, l.died
	}
}

func check(m *Message, op string) (*Message, error) {
	switch m.Op {
	case op:
		return m, nil
	case OpError:
		return nil, errors.New(m.Error)
	}
	return nil, fmt.Errorf("%w: %q where %q was due", errMalformed, m.Op, op)
}

// StartSandbox has the launcher create the container described by r and
// start its first process p, up to the wait for Exec. It returns the host PID
// of the first process.
func (l *Launcher) StartSandbox(r StartRequest, p Process) (int, error) {
	r.Protocol = ProtocolVersion
	m := &Message{Op: OpStart, Start: &r}
	var files []*os.File
	add := func(name string, f *os.File) {
		m.Files = append(m.Files, name)
		files = append(files, f)
	}
	var closeAfter []*os.File
	defer func() { closeAll(closeAfter) }()
	if p.Console != nil {
		add(FileConsole, p.Console)
	} else {
		if err := l.streams(p, add, &closeAfter); err != nil {
			return 0, err
		}
	}
	for _, f := range p.ExtraFiles {
		add(FileExtra, f)
	}
	l.mu.Lock()
	l.started = true
	l.mu.Unlock()
	if err := l.conn.send(m, files); err != nil {
		return 0, l.sendError(err)
	}
	closeAll(closeAfter)
	closeAfter = nil
	reply, err := l.reply(OpStarted)
	if err != nil {
		return 0, err
	}
	return reply.Pid, nil
}

// streams adds the process's standard streams to the start's descriptors:
// files as they are, pipes with copies for others.
func (l *Launcher) streams(p Process, add func(string, *os.File), closeAfter *[]*os.File) error {
	if p.Stdin != nil {
		if f, ok := p.Stdin.(*os.File); ok {
			add(FileStdin, f)
		} else {
			r, w, err := os.Pipe()
			if err != nil {
				return err
			}
			add(FileStdin, r)
			*closeAfter = append(*closeAfter, r)
			l.stdin = w
			go func() { _, _ = io.Copy(w, p.Stdin) }()
		}
	}
	for _, s := range []struct {
		name string
		w    io.Writer
	}{{FileStdout, p.Stdout}, {FileStderr, p.Stderr}} {
		if s.w == nil {
			continue
		}
		if f, ok := s.w.(*os.File); ok {
			add(s.name, f)
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		add(s.name, w)
		*closeAfter = append(*closeAfter, w)
		l.copies.Add(1)
		go func(dst io.Writer) {
			defer l.copies.Done()
			defer r.Close()
			_, _ = io.Copy(dst, r)
		}(s.w)
	}
	return nil
}

// sendError is err, a failed send, as the launcher's end when that is why.
func (l *Launcher) sendError(err error) error {
	select {
	case <-l.done:
		return l.died
	case <-time.After(time.Second):
		return fmt.Errorf("write to the sandbox's launcher %s: %w", l.path, err)
	}
}

// Exec lets the sandbox's first process run its command. It returns the
// sandbox's cgroup v2 directory, "" when it has none.
func (l *Launcher) Exec() (string, error) {
	if err := l.conn.send(&Message{Op: OpExec}, nil); err != nil {
		return "", l.sendError(err)
	}
	m, err := l.reply(OpExeced)
	if err != nil {
		return "", err
	}
	return m.Cgroup, nil
}

// Signal sends sig to the sandbox's first process.
func (l *Launcher) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal %v: not a syscall.Signal", sig)
	}
	select {
	case <-l.done:
		return l.died
	default:
	}
	return l.conn.send(&Message{Op: OpSignal, Signal: int(s)}, nil)
}

// Exited is closed when the sandbox's first process has exited, or the
// launcher has ended.
func (l *Launcher) Exited() <-chan struct{} { return l.exited }

// Wait waits for the sandbox's first process and returns its exit status as
// a shell reports it; with an error, when the launcher ended without a
// status, naming it.
func (l *Launcher) Wait() (int, error) {
	<-l.exited
	return l.status, l.waitErr
}

// Done is closed when the launcher has exited.
func (l *Launcher) Done() <-chan struct{} { return l.done }

// Destroy has the launcher kill what is left of the sandbox and remove
// libcontainer's state. It reports whether the launcher said it had, and
// then returns at once (the launcher's exit is waited for on the side); if
// not (it died, or took too long and was killed), it returns once the
// launcher has exited, and the caller cleans up after it.
func (l *Launcher) Destroy() bool {
	ok := false
	l.destroy.Do(func() {
		l.mu.Lock()
		started := l.started
		l.mu.Unlock()
		wait := destroyedWait
		if !started {
			// Nothing made yet: the socket's end stops it.
			_ = l.conn.c.CloseWrite()
			ok, wait = true, unstartedWait
		} else if l.conn.send(&Message{Op: OpDestroy}, nil) == nil {
			timer := time.NewTimer(destroyedWait)
			defer timer.Stop()
			for !ok {
				select {
				case m := <-l.replies:
					ok = m.Op == OpDestroyed
				case <-l.done:
					select {
					case m := <-l.replies:
						ok = m.Op == OpDestroyed
					default:
					}
					return
				case <-timer.C:
					_ = l.cmd.Process.Kill()
					<-l.done
					return
				}
			}
			// The sandbox is gone: the launcher's own exit is waited
			// for by the reader, not by the caller.
			return
		}
		select {
		case <-l.done:
		case <-time.After(wait):
			_ = l.cmd.Process.Kill()
			<-l.done
		}
	})
	return ok
}

// detachedWait bounds the wait for the launcher's OpDetached.
const detachedWait = 2 * time.Second

// Detach, once the sandbox's first process has exited, hands the rest of the
// destroy to the launcher: it destroys the sandbox and removes the state
// directory, now at root (the start's, or a name beside it that begins with
// the start's and a dot), holding lock (the directory's, which the caller
// may then close) until it has, and exits on its own, outliving the front.
// It reports whether the launcher took it; if not, the caller calls Destroy.
func (l *Launcher) Detach(lock *os.File, root string) bool {
	select {
	case <-l.exited:
	default:
		return false
	}
	select {
	case <-l.done:
		return false
	default:
	}
	ok := false
	l.destroy.Do(func() {
		if l.conn.send(&Message{Op: OpDetach, Files: []string{FileLock}, Root: root}, []*os.File{lock}) != nil {
			return
		}
		timer := time.NewTimer(detachedWait)
		defer timer.Stop()
		select {
		case m := <-l.replies:
			ok = m.Op == OpDetached
		case <-l.done:
			select {
			case m := <-l.replies:
				ok = m.Op == OpDetached
			default:
			}
		case <-timer.C:
		}
		if !ok {
			// Killed, it leaves the directory unlocked: the caller
			// cleans up.
			_ = l.cmd.Process.Kill()
			<-l.done
		}
	})
	return ok
}

// shared holds the sealed copies of launchers that ShareCopies makes.
var shared struct {
	sync.Mutex
	copies map[string]*sharedFile
}

// sharedFile is one shared copy: f, once done is closed (nil if none could
// be made).
type sharedFile struct {
	done chan struct{}
	f    *sealedExe
}

// ShareCopies has the Starts of the launcher at path run it from one sealed
// memfd copy of its executable, made once for this process, on the side, from
// now on, instead of each launcher copying itself at its start (RunSealed). A
// process that starts many sandboxes (a server) so holds one copy in memory,
// not one a sandbox, and no start but the first waits for a copy.
func ShareCopies(path string) {
	shared.Lock()
	defer shared.Unlock()
	if shared.copies == nil {
		shared.copies = map[string]*sharedFile{}
	}
	if shared.copies[path] != nil {
		return
	}
	sf := &sharedFile{done: make(chan struct{})}
	shared.copies[path] = sf
	go func() {
		defer close(sf.done)
		sf.f = highSealedCopy(path)
	}()
}

// sharedCopy returns the shared copy of the launcher at path, once made;
// nil if ShareCopies was not called for path or could not make it.
func sharedCopy(path string) *sealedExe {
	shared.Lock()
	sf := shared.copies[path]
	shared.Unlock()
	if sf == nil {
		return nil
	}
	<-sf.done
	return sf.f
}

// prepared is the sealed copy that Prepare makes for the next Start.
var prepared struct {
	sync.Mutex
	path string
	done chan struct{}
	f    *sealedExe
}

// Prepare starts making a sealed memfd copy of the launcher at path, on the
// side, for the next Start of path to run the launcher from. So the copy is
// made while the front still works, and the launcher neither copies nor
// executes itself again (RunSealed): one exec and one Go start. A front that
// starts one sandbox calls it as soon as it knows a sandbox is wanted.
func Prepare(path string) {
	prepared.Lock()
	defer prepared.Unlock()
	if prepared.done != nil {
		return
	}
	done := make(chan struct{})
	prepared.path, prepared.done = path, done
	go func() {
		f := highSealedCopy(path)
		prepared.Lock()
		prepared.f = f
		prepared.Unlock()
		close(done)
	}()
}

// preparedCopy waits for the copy that Prepare makes of the launcher at path
// and returns it, once; nil if there is none (the launcher then copies
// itself).
func preparedCopy(path string) *sealedExe {
	prepared.Lock()
	done, same := prepared.done, prepared.path == path
	prepared.Unlock()
	if done == nil || !same {
		return nil
	}
	<-done
	prepared.Lock()
	defer prepared.Unlock()
	f := prepared.f
	prepared.f, prepared.path = nil, ""
	return f
}

// highSealedCopy is sealedCopy(path) with the copy on a descriptor far above
// those a child is given, which the fork puts in place before it executes the
// copy.
func highSealedCopy(path string) *sealedExe {
	e := sealedCopy(path)
	if e == nil {
		return nil
	}
	fd, err := unix.FcntlInt(e.copy.Fd(), unix.F_DUPFD_CLOEXEC, 100)
	e.copy.Close()
	if err != nil {
		e.src.Close()
		return nil
	}
	e.copy = os.NewFile(uintptr(fd), "boxsh-launch (sealed)")
	return e
}
