package bash

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/agent/reap"
)

// A zygote is a shell started once with the fork-server library
// (zygote/zygote.c) preloaded: instead of running, it makes new warm
// shells on request by cloning itself, which costs about a third of what
// starting one by exec costs. The shells it makes are boxsh-init's
// children, each in its own process group, as shells started by exec are.
type zygote struct {
	cmd    *exec.Cmd
	reaper *reap.Reaper

	mu   sync.Mutex // one request at a time
	conn *net.UnixConn
}

// Protocol of the fork-server library (zygote/zygote.c).
const (
	zygoteHello = 0x62787a32
)

// zygoteTimeout bounds the wait for the zygote's hello and for each
// answer: a zygote that does not answer in time (stopped, or a shell that
// ignores the library) is given up. (A variable for the tests.)
var zygoteTimeout = 2 * time.Second

// startZygote starts `argv` (the pool's warm-shell program, possibly
// wrapped in limits) as a zygote with the library lib preloaded, with the
// pool's environment and directory, and waits for it to serve.
func startZygote(lib string, argv, env []string, dir string, devNull *os.File, reaper *reap.Reaper) (*zygote, error) {
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

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(env[:len(env):len(env)], "LD_PRELOAD="+lib, zygoteFDEnv+"=3")
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, devNull
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = procAttr()
	z := &zygote{cmd: cmd, reaper: reaper, conn: conn}
	if err := reaper.Start(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}); err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = theirs.Close()
	if v, err := z.read(); err != nil || v != zygoteHello {
		z.close()
		if err == nil {
			err = fmt.Errorf("unexpected hello %#x", v)
		}
		return nil, fmt.Errorf("%s does not serve as a zygote: %w", argv[len(argv)-3], err)
	}
	return z, nil
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

// spawn makes a new shell with the given stdin, stdout, stderr and
// command pipe and returns its process, in its own process group. After
// any error but a cloneError the zygote is of no more use: a late answer
// would be taken for the next request's.
func (z *zygote) spawn(stdin, stdout, stderr, ctl *os.File) (*os.Process, error) {
	rights := unix.UnixRights(int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd()), int(ctl.Fd()))
	z.mu.Lock()
	defer z.mu.Unlock()
	v, err := z.request(rights)
	if err != nil {
		_ = z.conn.Close()
		return nil, fmt.Errorf("zygote: %w", err)
	}
	if v < 0 {
		return nil, &cloneError{syscall.Errno(-v)}
	}
	pid := int(v)
	// The shell makes itself a group leader too; whichever comes first,
	// the group exists before anyone signals it.
	_ = unix.Setpgid(pid, pid)
	proc, err := os.FindProcess(pid)
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_, _ = syscall.Wait4(pid, nil, 0, nil)
		return nil, &cloneError{syscall.ESRCH}
	}
	return proc, nil
}

// request sends one request and reads its answer: a PID, or -errno.
func (z *zygote) request(rights []byte) (int32, error) {
	if _, _, err := z.conn.WriteMsgUnix([]byte{0}, rights, nil); err != nil {
		return 0, err
	}
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
