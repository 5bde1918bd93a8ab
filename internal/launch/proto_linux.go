package launch

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
)

// ProtocolVersion is the version of the messages; the front's and the
// launcher's must be the same.
const ProtocolVersion = 2

// The operations of a Message.
//
// The front sends OpStart first, then OpExec once the sandbox is set up, and
// OpSignal and OpDestroy at any time after. The launcher answers OpStart with
// OpStarted, OpExec with OpExeced and OpDestroy with OpDestroyed, or any of
// them with OpError; it sends OpExited, once, when the sandbox's first
// process has exited. After OpExited, the front may send OpDetach instead of
// OpDestroy, with the state directory's lock (FileLock) and its path: the launcher answers
// OpDetached, then destroys the sandbox and removes the state directory on
// its own, holding the lock until it has, and exits.
const (
	OpStart     = "start"
	OpExec      = "exec"
	OpSignal    = "signal"
	OpDestroy   = "destroy"
	OpDetach    = "detach"
	OpStarted   = "started"
	OpExeced    = "execed"
	OpExited    = "exited"
	OpDestroyed = "destroyed"
	OpDetached  = "detached"
	OpError     = "error"
)

// The names of the descriptors of OpStart (Message.Files).
const (
	FileStdin   = "stdin"
	FileStdout  = "stdout"
	FileStderr  = "stderr"
	FileConsole = "console"
	FileExtra   = "extra"
	// FileLock is OpDetach's descriptor: the state directory's lock.
	FileLock = "lock"
)

// maxMessage bounds a message's JSON.
const maxMessage = 16 << 20

// maxFiles bounds the descriptors of one message.
const maxFiles = 64

// Message is one message either way.
type Message struct {
	Op string `json:"op"`
	// Files names the descriptors sent with the message, in order.
	Files []string `json:"files,omitempty"`
	// Start is OpStart's sandbox and process.
	Start *StartRequest `json:"start,omitempty"`
	// Signal is OpSignal's signal number.
	Signal int `json:"signal,omitempty"`
	// Pid is the host PID of the sandbox's first process (OpStarted).
	Pid int `json:"pid,omitempty"`
	// Cgroup is the sandbox's cgroup v2 directory, if it has one
	// (OpExeced).
	Cgroup string `json:"cgroup,omitempty"`
	// Status is the exit status of the first process as a shell reports it
	// (OpExited).
	Status int `json:"status,omitempty"`
	// Error is OpError's error, or OpExited's when no status was had.
	Error string `json:"error,omitempty"`
	// Root is OpDetach's state directory: StartRequest.Root, or where the
	// front moved it beside.
	Root string `json:"root,omitempty"`
}

// StartRequest is the sandbox to create and the process to start in it.
type StartRequest struct {
	// Protocol is ProtocolVersion, Version the front's build: a launcher
	// of another build refuses to start.
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	// Root and ID are libcontainer's state root and the container's name
	// under it.
	Root string `json:"root"`
	ID   string `json:"id"`
	// Config is libcontainer's configs.Config.
	Config json.RawMessage `json:"config"`
	// Args, Env, Cwd and Rlimits are the first process's.
	Args    []string         `json:"args"`
	Env     []string         `json:"env,omitempty"`
	Cwd     string           `json:"cwd,omitempty"`
	Rlimits []configs.Rlimit `json:"rlimits,omitempty"`
	// Debug routes libcontainer's debug log to the launcher's stderr.
	Debug bool `json:"debug,omitempty"`
}

// conn is one end of the socket pair, with whole messages either way.
type conn struct {
	c  *net.UnixConn
	mu sync.Mutex // one writer at a time
}

func newConn(f *os.File) (*conn, error) {
	nc, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("%s is not a unix socket", f.Name())
	}
	return &conn{c: uc}, nil
}

// send writes m with files attached (their names are m.Files).
func (c *conn) send(m *Message, files []*os.File) error {
	if len(files) != len(m.Files) {
		return fmt.Errorf("%d descriptors for %d names", len(files), len(m.Files))
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	buf := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	buf = append(buf, body...)
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = syscall.UnixRights(fds...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n, _, err := c.c.WriteMsgUnix(buf, oob, nil)
	if err == nil && n < len(buf) {
		_, err = c.c.Write(buf[n:])
	}
	return err
}

// errMalformed is a message that breaks the protocol.
var errMalformed = errors.New("malformed message")

// recv reads one message and the descriptors sent with it. At the socket's
// end it returns io.EOF; past a read deadline before the message's first
// byte, an error that is os.ErrDeadlineExceeded.
func (c *conn) recv() (*Message, []*os.File, error) {
	head := make([]byte, 4)
	oob := make([]byte, syscall.CmsgSpace(4*maxFiles))
	n, oobn, flags, _, err := c.c.ReadMsgUnix(head, oob)
	if err != nil {
		if n <= 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			return nil, nil, io.EOF
		}
		return nil, nil, err
	}
	if n <= 0 {
		return nil, nil, io.EOF
	}
	// A read deadline (the launcher's settle) is for the wait between
	// messages: the rest of this one is read without it.
	_ = c.c.SetReadDeadline(time.Time{})
	files, ferr := parseRights(oob[:oobn])
	if ferr == nil && flags&syscall.MSG_CTRUNC != 0 {
		ferr = fmt.Errorf("%w: more than %d descriptors", errMalformed, maxFiles)
	}
	fail := func(err error) (*Message, []*os.File, error) {
		closeAll(files)
		return nil, nil, err
	}
	if ferr != nil {
		return fail(ferr)
	}
	if _, err := io.ReadFull(c.c, head[n:]); err != nil {
		return fail(fmt.Errorf("%w: cut short: %v", errMalformed, err))
	}
	size := binary.BigEndian.Uint32(head)
	if size == 0 || size > maxMessage {
		return fail(fmt.Errorf("%w: length %d", errMalformed, size))
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c.c, body); err != nil {
		return fail(fmt.Errorf("%w: cut short: %v", errMalformed, err))
	}
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return fail(fmt.Errorf("%w: %v", errMalformed, err))
	}
	if len(m.Files) != len(files) {
		return fail(fmt.Errorf("%w: %d descriptors for %d names", errMalformed, len(files), len(m.Files)))
	}
	return &m, files, nil
}

func (c *conn) Close() error { return c.c.Close() }

// parseRights returns the descriptors of SCM_RIGHTS control messages.
func parseRights(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	var files []*os.File
	for i := range msgs {
		fds, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "launch-fd"))
		}
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// socketPair returns a connected pair of unix stream sockets, both
// close-on-exec.
func socketPair() (*os.File, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "launch"), os.NewFile(uintptr(fds[1]), "launch-child"), nil
}
