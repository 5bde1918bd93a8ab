package bash

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/toolhost/reap"
)

// A zygote is a shell started once with the fork-server library
// (zygote/zygote.c) preloaded. Instead of running, it makes new warm
// shells on request by cloning itself, which costs much less than
// starting a shell by exec. The shells it makes are boxsh-init's
// children, each in its own process group, as shells started by exec are.
type zygote struct {
	cmd    *exec.Cmd
	reaper *reap.Reaper

	mu   sync.Mutex // one exchange at a time
	conn *net.UnixConn
	// exchanges counts spawnEach's exchanges (for the tests).
	exchanges atomic.Int64
}

// Protocol of the fork-server library (zygote/zygote.c).
const (
	zygoteHello = 0x62787a32
)

// zygoteTimeout bounds the wait for the zygote's hello and for each answer. A
// zygote that does not answer in time, stopped or a shell that ignores the
// library, is given up. It is a variable for the tests.
var zygoteTimeout = 2 * time.Second

// zygotePlaceholder is the zygote's `-c` argument. In the shells it
// clones the command takes its place, and its bytes show what ps shows of
// the command; a shell that does not load the library runs it and exits.
var zygotePlaceholder = "exit 126" + strings.Repeat(" ", 248)

// maxShellSize bounds the shell binary copied for the zygote.
const maxShellSize = 64 << 20

// startZygote starts shell as a zygote with the library lib preloaded,
// with the pool's environment, directory and limits, and waits for it to
// serve.
//
// No command may ever read or write the zygote's memory (a command of an
// earlier call may kill the zygote and watch for the next one). A process
// is dumpable from its exec until it turns that off, and a /proc/PID/mem
// opened meanwhile stays usable. So the zygote is not dumpable from its
// exec on: the kernel keeps a process that executes a program it cannot
// read non-dumpable, and the zygote is started from a copy of the shell
// it cannot read (see execOnlyCopy). Nor is it started through
// boxsh-init --limits, which would be dumpable until it executes the
// shell: the pool sets the limits on the zygote (prlimit) before its
// first clone, which inherit them.
func startZygote(lib, shell string, limits proc.Limits, env []string, dir string, devNull *os.File, reaper *reap.Reaper) (*zygote, error) {
	// The library takes LD_PRELOAD over: an environment that sets its own
	// keeps every shell started by exec.
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "LD_PRELOAD=") }) {
		return nil, errors.New("the environment sets LD_PRELOAD")
	}
	if strings.ContainsAny(lib, " :") {
		// LD_PRELOAD would split the path there.
		return nil, fmt.Errorf("%s: a space or colon in the path", lib)
	}
	if _, err := os.Stat(lib); err != nil {
		return nil, err
	}
	// Found as exec would find it; $0 stays as given.
	path, err := exec.LookPath(shell)
	if err != nil {
		return nil, err
	}
	exe, err := execOnlyCopy(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = exe.Close() }()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "zygote"), os.NewFile(uintptr(fds[1]), "zygote")
	defer func() { _ = theirs.Close() }()
	c, err := net.FileConn(ours)
	_ = ours.Close()
	if err != nil {
		return nil, fmt.Errorf("zygote socket: %w", err)
	}
	conn := c.(*net.UnixConn)

	// The socket is fd 3 and the shell's copy fd 4 (the library closes
	// it).
	cmd := &exec.Cmd{
		Path: "/proc/self/fd/4",
		Args: []string{shell, "-c", zygotePlaceholder},
		Env:  zygoteEnv(env, lib),
		Dir:  dir,
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, devNull
	cmd.ExtraFiles = []*os.File{theirs, exe}
	cmd.SysProcAttr = procAttr()
	z := &zygote{cmd: cmd, reaper: reaper, conn: conn}
	if err := reaper.Start(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("start zygote %s: %w", shell, err)
	}
	_ = theirs.Close()
	if v, err := z.read(); err != nil || v != zygoteHello {
		z.close()
		if err == nil {
			err = fmt.Errorf("unexpected hello %#x", v)
		}
		return nil, fmt.Errorf("%s does not serve as a zygote: %w", shell, err)
	}
	if err := setLimits(cmd.Process.Pid, limits); err != nil {
		z.close()
		return nil, fmt.Errorf("zygote limits: %w", err)
	}
	return z, nil
}

// zygoteBindEnv marks an LD_BIND_NOW that the pool set for the zygote
// alone: the library removes both, so that the shells it clones have the
// pool's environment.
const zygoteBindEnv = "BOXSH_ZYGOTE_BIND_NOW"

// zygoteEnv returns the environment of the zygote: the pool's, with the
// library preloaded and its socket named.
//
// Unless the pool's environment sets it itself, LD_BIND_NOW has the loader
// bind every symbol of the shell and its libraries once, in the zygote.
// Otherwise each clone would bind them as its shell first calls them, at a
// cost to every clone.
func zygoteEnv(env []string, lib string) []string {
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, zygoteBindEnv+"=") })
	env = append(env, "LD_PRELOAD="+lib, zygoteFDEnv+"=3")
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "LD_BIND_NOW=") }) {
		env = append(env, "LD_BIND_NOW=1", zygoteBindEnv+"=1")
	}
	return env
}

// execOnlyCopy copies the executable file path, following links, into an
// anonymous file of mode 0111.
//
// It returns that file open by path only, since a descriptor open for writing
// would make its exec fail. A process that executes a program it cannot read
// is not dumpable. Its own user gets no read access to mode 0111 without
// CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH, which the sandbox's root does not
// have. (An execute-only script would not do: the kernel judges by the
// interpreter it runs.)
func execOnlyCopy(path string) (*os.File, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = src.Close() }()
	if fi, err := src.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 || fi.Size() > maxShellSize {
		return nil, fmt.Errorf("%s: not an executable file of at most %d MiB", path, maxShellSize>>20)
	}
	fd, err := unix.MemfdCreate("boxsh-zygote", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) { // before Linux 6.3
		fd, err = unix.MemfdCreate("boxsh-zygote", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "boxsh-zygote")
	defer func() { _ = f.Close() }()
	if _, err := io.Copy(f, src); err != nil {
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	if err := f.Chmod(0o111); err != nil {
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	// Every clone runs this copy, and a command can reach its own
	// shell's (/proc/$$/exe, and chmod it): sealed, nobody can change it,
	// whether or not the kernel refuses writes to a running program.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		return nil, fmt.Errorf("seal the copy of %s: %w", path, err)
	}
	pfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	return os.NewFile(uintptr(pfd), "boxsh-zygote"), nil
}

// setLimits sets limits on process pid, soft and hard alike.
func setLimits(pid int, l proc.Limits) error {
	set := func(resource int, v int64) error {
		if v <= 0 {
			return nil
		}
		return unix.Prlimit(pid, resource, &unix.Rlimit{Cur: uint64(v), Max: uint64(v)}, nil)
	}
	if err := set(unix.RLIMIT_DATA, l.Data); err != nil {
		return err
	}
	return set(unix.RLIMIT_NPROC, int64(l.Procs))
}

// read reads one answer of the zygote.
func (z *zygote) read() (int32, error) {
	var b [4]byte
	_ = z.conn.SetReadDeadline(time.Now().Add(zygoteTimeout))
	n, err := z.conn.Read(b[:])
	if err == nil && n != len(b) {
		err = fmt.Errorf("short answer (%d bytes)", n)
	}
	if err != nil {
		return 0, err
	}
	return int32(binary.NativeEndian.Uint32(b[:])), nil
}

// cloneError is a clone the zygote answered it could not make (a limit
// on processes reached, say): the zygote itself is fine.
type cloneError struct{ errno syscall.Errno }

func (e *cloneError) Error() string { return "zygote: clone: " + e.errno.Error() }
func (e *cloneError) Unwrap() error { return e.errno }

// spawnEach makes a new shell for each of shells, and calls done with its
// process or the error.
//
// Each shell gets stdin and its stdout, stderr and command pipe (the ends it
// is to have), in its own process group. The requests are all sent before the
// first answer is read. The zygote serves them one after the other without
// waiting, and the answers are read in one wake-up if they are there by then.
//
// spawnEach returns the error after which the zygote is of no more use: any
// but a cloneError, since a late answer would be taken for the next request's.
// The shells not made by then get it.
func (z *zygote) spawnEach(stdin *os.File, shells []*shell, done func(*shell, *child, error)) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.exchanges.Add(1)
	var failed error
	sent := 0
	for _, s := range shells {
		rights := unix.UnixRights(int(stdin.Fd()), int(s.outW.Fd()), int(s.errW.Fd()), int(s.ctlR.Fd()))
		if _, _, err := z.conn.WriteMsgUnix([]byte{0}, rights, nil); err != nil {
			failed = err
			break
		}
		sent++
	}
	for i, s := range shells {
		if i < sent && failed == nil {
			v, err := z.answer()
			if err == nil {
				c, err := z.child(v)
				done(s, c, err)
				continue
			}
			failed = err
		}
		done(s, nil, fmt.Errorf("zygote: %w", failed))
	}
	if failed != nil {
		_ = z.conn.Close()
		return fmt.Errorf("zygote: %w", failed)
	}
	return nil
}

// child takes over the shell the zygote answered v for: its PID, or
// -errno (a cloneError).
func (z *zygote) child(v int32) (*child, error) {
	if v < 0 {
		return nil, &cloneError{syscall.Errno(-v)}
	}
	pid := int(v)
	// The shell makes itself a group leader too; whichever comes first,
	// the group exists before anyone signals it.
	_ = unix.Setpgid(pid, pid)
	c, err := childOf(pid)
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_, _ = syscall.Wait4(pid, nil, 0, nil)
		return nil, &cloneError{syscall.ESRCH}
	}
	return c, nil
}

// answer reads the answer to a request: a PID, or -errno.
func (z *zygote) answer() (int32, error) {
	v, err := z.read()
	if err == nil && v == 0 {
		err = errors.New("answered PID 0")
	}
	return v, err
}

// close stops the zygote and waits for it.
func (z *zygote) close() {
	_ = z.conn.Close()
	_ = z.cmd.Process.Kill()
	_ = z.cmd.Wait()
	z.reaper.Forget(z.cmd.Process.Pid)
}

// String names the zygote in logs.
func (z *zygote) String() string { return "zygote " + strconv.Itoa(z.cmd.Process.Pid) }
