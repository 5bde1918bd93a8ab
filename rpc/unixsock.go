package rpc

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A listen address unix:PATH is a Unix socket at PATH. Its mode (0600)
// is its access control, as loopback is a TCP address's: a server on one
// needs no bearer token, though one given is still asked for.

// unixPrefix starts a listen address that is a Unix socket's path.
const unixPrefix = "unix:"

// ErrSocketInUse refuses a unix:PATH another server listens on.
var ErrSocketInUse = errors.New("another server is listening on")

// UnixPath returns the path of a listen address unix:PATH, and whether
// addr is one (unix: alone is, with no path).
func UnixPath(addr string) (string, bool) {
	p, ok := strings.CutPrefix(addr, unixPrefix)
	if !ok {
		return "", false
	}
	return p, true
}

// BaseURL is the URL that the paths of a server listening on addr go
// under: http://HOST:PORT, or for a Unix socket http://unix:PATH: (the
// form NGINX's proxy_pass takes).
func BaseURL(addr net.Addr) string {
	if addr.Network() == "unix" {
		return "http://" + unixPrefix + addr.String() + ":"
	}
	return "http://" + addr.String()
}

// onUnixSocket reports whether r came in on a Unix socket.
func onUnixSocket(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && a.Network() == "unix"
}

// listenUnix listens on a Unix socket at path, mode 0600. The socket is
// bound, made 0600 and only then listened on, so that nobody else can
// connect whatever the umask. A socket at path that nobody accepts on (a
// server that died) is replaced; a live one, or a file that is not a
// socket, is refused. Closing the listener removes the socket.
func listenUnix(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("listen unix:PATH: no path")
	}
	if err := clearStaleSocket(path); err != nil {
		return nil, err
	}
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("listen unix:%s: socket: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		return nil, fmt.Errorf("listen unix:%s: bind: %w", path, err)
	}
	// Until listen, a connect is refused: the mode holds before anyone
	// can reach the socket.
	bound, err := os.Lstat(path)
	if err == nil {
		err = os.Chmod(path, 0o600)
	}
	if err == nil {
		// The kernel caps the backlog at net.core.somaxconn.
		err = syscall.Listen(fd, 4096)
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("listen unix:%s: %w", path, err)
	}
	ln, err := net.FileListener(f)
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("listen unix:%s: %w", path, err)
	}
	ul, ok := ln.(*net.UnixListener)
	if !ok {
		_ = ln.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("listen unix:%s: not a Unix socket listener", path)
	}
	return &unixListener{UnixListener: ul, path: path, bound: bound}, nil
}

// clearStaleSocket removes a socket at path that nobody accepts on, and
// refuses a live socket or a file of another kind.
func clearStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listen unix:%s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("listen unix:%s: %s is a %v, not a socket: refusing to replace it", path, path, fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		_ = c.Close()
		return fmt.Errorf("%w unix:%s", ErrSocketInUse, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		// Not known to be dead (another's socket, a full backlog): left.
		return fmt.Errorf("listen unix:%s: the socket there is not known to be stale: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("listen unix:%s: remove the stale socket: %w", path, err)
	}
	return nil
}

// unixListener is the listener of listenUnix: it removes its socket when
// closed, if the file there is still the one it bound.
type unixListener struct {
	*net.UnixListener
	path  string
	bound os.FileInfo
	once  sync.Once
	err   error
}

func (l *unixListener) Close() error {
	l.once.Do(func() {
		if fi, err := os.Lstat(l.path); err == nil && os.SameFile(fi, l.bound) {
			_ = os.Remove(l.path)
		}
		l.err = l.UnixListener.Close()
	})
	return l.err
}
