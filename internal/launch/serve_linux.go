package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/starttrace"
)

// ConnFD is the launcher's descriptor of its end of the socket pair.
const ConnFD = 3

// destroyWait bounds the wait for the first process after its SIGKILL.
const destroyWait = 5 * time.Second

// process is the sandbox's first process: libcontainer's, or, in a launcher
// executed again (settle), the child it still is.
type process interface {
	Signal(os.Signal) error
	Wait() (*os.ProcessState, error)
}

// server is the launcher's side: one sandbox, from OpStart to its destroy.
type server struct {
	conn    *conn
	version string
	c       *libcontainer.Container
	proc    process
	pid     int
	exited  chan struct{}
	// reap is held by the waiter from the first process's exit to the
	// end of OpExited, and by settle across its execve.
	reap sync.Mutex
	// release drops the hold on the init's executable (holdExeCopy).
	release func()
	// root and id are libcontainer's state root and the container's name
	// (StartRequest.Root and ID).
	root, id string
	// removeRoot is root once the front has detached: removed after the
	// destroy, while lock is still held.
	removeRoot string
	lock       []*os.File
}

// Serve runs the launcher on the socket f until the front destroys the sandbox
// or goes away, and destroys the sandbox then. version is the launcher's
// build, which must be the front's.
//
// Call it on the main thread (runtime.LockOSThread in an init function):
// after an OpDetach it clears the parent-death signal, which is the main
// thread's.
//
// It returns nil after an OpDestroy, an OpDetach or the socket's end; an
// error after a message that breaks the protocol, which it has reported to
// the front if it could.
func Serve(f *os.File, version string, stderr io.Writer) error {
	c, err := newConn(f)
	if err != nil {
		return err
	}
	defer c.Close()
	s := &server{conn: c, version: version, exited: make(chan struct{})}
	defer func() {
		if s.removeRoot != "" {
			_ = os.RemoveAll(s.removeRoot)
		}
		closeAll(s.lock)
	}()
	defer s.destroy()
	logrus.SetOutput(stderr)
	logrus.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})
	logrus.SetLevel(logrus.ErrorLevel)
	starttrace.Mark("launch.ready")

	if resumed, err := s.resume(); resumed {
		if err != nil {
			return err
		}
		return s.serve()
	}
	m, files, err := c.recv()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return s.fail(err)
	}
	if m.Op != OpStart {
		closeAll(files)
		return s.fail(fmt.Errorf("%w: %q before %q", errMalformed, m.Op, OpStart))
	}
	if err := s.start(m, files); err != nil {
		// A refusal of the start is the front's to report; the sandbox
		// is destroyed at its OpDestroy or the socket's end.
		if errors.Is(err, errMalformed) {
			return s.fail(err)
		}
		if err := c.send(&Message{Op: OpError, Error: err.Error()}, nil); err != nil {
			return err
		}
	}
	return s.serve()
}

// serve answers the front's messages after OpStart, until OpDestroy, OpDetach
// or the socket's end. Once the first process runs its command (OpExec), the
// launcher settles after settleAfter without a message.
func (s *server) serve() error {
	c := s.conn
	settled := true
	for {
		if !settled {
			_ = c.c.SetReadDeadline(time.Now().Add(settleAfter))
		}
		m, files, err := c.recv()
		if !settled && errors.Is(err, os.ErrDeadlineExceeded) {
			settled = true
			_ = c.c.SetReadDeadline(time.Time{})
			s.settle() // returns if it did not
			continue
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return s.fail(err)
		}
		if m.Op == OpDetach {
			return s.detach(m, files)
		}
		closeAll(files)
		switch m.Op {
		case OpExec:
			reply := &Message{Op: OpExeced}
			if err := s.exec(); err != nil {
				reply = &Message{Op: OpError, Error: err.Error()}
			} else {
				reply.Cgroup = s.cgroup()
				settled = false
			}
			if err := c.send(reply, nil); err != nil {
				return err
			}
		case OpSignal:
			if s.proc != nil && m.Signal > 0 && m.Signal < 65 {
				_ = s.proc.Signal(syscall.Signal(m.Signal))
			}
		case OpDestroy:
			s.destroy()
			return c.send(&Message{Op: OpDestroyed}, nil)
		default:
			return s.fail(fmt.Errorf("%w: unknown operation %q", errMalformed, m.Op))
		}
	}
}

// detach answers OpDetach: the launcher outlives the front, destroys the
// sandbox, removes the state directory and exits, holding the directory's
// lock until then.
//
// The launcher no longer dies with the front (its parent-death signal is
// cleared before it answers, so the front may exit at once), and no longer
// writes to the front's stderr, which may be gone. A launcher killed before
// it is done leaves the directory unlocked, for the next start (the front's
// sweepStale) to clean up.
func (s *server) detach(m *Message, files []*os.File) error {
	if len(files) != 1 || len(m.Files) != 1 || m.Files[0] != FileLock {
		closeAll(files)
		return s.fail(fmt.Errorf("%w: %q without the state directory's lock", errMalformed, OpDetach))
	}
	select {
	case <-s.exited:
	default:
		closeAll(files)
		return s.fail(fmt.Errorf("%w: %q before the sandbox's exit", errMalformed, OpDetach))
	}
	if m.Root != s.root && (filepath.Dir(m.Root) != filepath.Dir(s.root) || !strings.HasPrefix(filepath.Base(m.Root), filepath.Base(s.root)+".")) {
		closeAll(files)
		return s.fail(fmt.Errorf("%w: %q of state directory %q, not beside %q", errMalformed, OpDetach, m.Root, s.root))
	}
	s.lock = files
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, 0, 0, 0, 0); err != nil {
		// Still the front's: it destroys as it would have.
		closeAll(files)
		s.lock = nil
		return s.fail(fmt.Errorf("detach from the front: %w", err))
	}
	logrus.SetOutput(io.Discard)
	if null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		_ = unix.Dup2(int(null.Fd()), 2)
		null.Close()
	}
	s.removeRoot = m.Root
	return s.conn.send(&Message{Op: OpDetached}, nil)
}

// fail reports err to the front, if it can, and returns it.
func (s *server) fail(err error) error {
	_ = s.conn.send(&Message{Op: OpError, Error: err.Error()}, nil)
	return err
}

// start creates the container and starts its first process, up to the wait
// for OpExec, and answers OpStarted.
func (s *server) start(m *Message, files []*os.File) error {
	defer closeAll(files) // the process's own copies are made by then
	r := m.Start
	switch {
	case r == nil:
		return fmt.Errorf("%w: %q without its request", errMalformed, OpStart)
	case r.Protocol != ProtocolVersion:
		return fmt.Errorf("the sandbox's launcher speaks protocol %d, the front %d: install boxsh and boxsh-launch of the same build", ProtocolVersion, r.Protocol)
	case r.Version != s.version:
		return fmt.Errorf("the sandbox's launcher is build %s, the front %s: install boxsh and boxsh-launch of the same build", s.version, r.Version)
	case !filepath.IsAbs(r.Root) || r.ID == "" || strings.ContainsRune(r.ID, '/'):
		return fmt.Errorf("%w: state root %q, id %q", errMalformed, r.Root, r.ID)
	case len(r.Args) == 0:
		return fmt.Errorf("%w: no command", errMalformed)
	}
	s.root, s.id = r.Root, r.ID
	config, err := DecodeConfig(r.Config)
	if err != nil {
		return fmt.Errorf("%w: config: %v", errMalformed, err)
	}
	p := &libcontainer.Process{
		Args:    r.Args,
		Env:     r.Env,
		Cwd:     r.Cwd,
		Rlimits: r.Rlimits,
		Init:    true,
	}
	for i, name := range m.Files {
		f := files[i]
		switch name {
		case FileStdin:
			p.Stdin = f
		case FileStdout:
			p.Stdout = f
		case FileStderr:
			p.Stderr = f
		case FileConsole:
			p.ConsoleSocket = f
		case FileExtra:
			p.ExtraFiles = append(p.ExtraFiles, f)
		default:
			return fmt.Errorf("%w: descriptor %q", errMalformed, name)
		}
	}
	if r.Debug {
		logrus.SetLevel(logrus.DebugLevel)
	}
	p.LogLevel = traceLibcontainer(r.Debug)
	starttrace.Mark("launch.request")
	c, err := libcontainer.Create(r.Root, r.ID, config)
	if err != nil {
		return err
	}
	s.c = c
	starttrace.Mark("launch.create")
	if err := startInit(c, p); err != nil {
		return err
	}
	s.proc = p
	pid, err := p.Pid()
	if err != nil {
		return err
	}
	s.pid = pid
	s.release = holdExeCopy(pid)
	s.watch()
	return s.conn.send(&Message{Op: OpStarted, Pid: pid}, nil)
}

// watch waits on the side for the first process's exit, and tells it.
//
// It sees the exit without reaping the process first, then reaps it holding
// s.reap, so that settle never executes the launcher again between the two.
func (s *server) watch() {
	go func() {
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, s.pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		s.reap.Lock()
		defer s.reap.Unlock()
		state, err := s.proc.Wait()
		m := &Message{Op: OpExited}
		if ws, ok := stateStatus(state); ok {
			m.Status = ws
		} else {
			m.Status, m.Error = 1, fmt.Sprint(err)
		}
		close(s.exited)
		_ = s.conn.send(m, nil)
	}()
}

// exec lets the first process run the sandbox's command.
func (s *server) exec() error {
	if s.c == nil || s.proc == nil {
		return errors.New("no sandbox to run")
	}
	err := s.c.Exec()
	if s.release != nil {
		s.release()
		s.release = nil
	}
	return err
}

// cgroup is the container's cgroup v2 directory, or "".
func (s *server) cgroup() string {
	st, err := s.c.State()
	if err != nil {
		return ""
	}
	return st.CgroupPaths[""] // the unified hierarchy's; v1 names controllers
}

// destroy kills what is left of the sandbox and removes libcontainer's state.
func (s *server) destroy() {
	if s.proc != nil {
		select {
		case <-s.exited:
		default:
			_ = s.proc.Signal(unix.SIGKILL)
			select {
			case <-s.exited:
			case <-time.After(destroyWait):
			}
		}
		s.proc = nil
	}
	if s.release != nil {
		s.release()
		s.release = nil
	}
	if s.c != nil {
		_ = s.c.Destroy()
		s.c = nil
	}
}

// DecodeConfig decodes libcontainer's configuration as the front encoded it.
//
// The cgroup's resources are embedded in its JSON, and all-zero resources
// leave no member: they are made again, as libcontainer's cgroup managers need
// them.
func DecodeConfig(b []byte) (*configs.Config, error) {
	var config configs.Config
	if err := json.Unmarshal(b, &config); err != nil {
		return nil, err
	}
	if config.Cgroups != nil && config.Cgroups.Resources == nil {
		config.Cgroups.Resources = &cgroups.Resources{}
	}
	return &config, nil
}

// stateStatus is the exit status of state as a shell reports it: the exit
// code, or 128+N after a death by signal N.
func stateStatus(state *os.ProcessState) (int, bool) {
	if state == nil {
		return 0, false
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok {
		return state.ExitCode(), true
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal()), true
	}
	return ws.ExitStatus(), true
}

// startInit starts the container's init process.
//
// libcontainer first copies the launcher's executable into a sealed memfd. The
// kernel refuses the seal (EBUSY) while a page of the copy is still held
// elsewhere, as happens for a moment on a loaded machine. Such a start, which
// has done nothing yet, is tried again, twice at most.
func startInit(c *libcontainer.Container, p *libcontainer.Process) error {
	for attempt := 1; ; attempt++ {
		err := c.Start(p)
		if err == nil || attempt == 3 || !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "/proc/self/exe clone") {
			return err
		}
		logrus.Debugf("the copy of boxsh-launch for the sandbox's init was refused its seal; trying again (attempt %d): %v", attempt, err)
	}
}
