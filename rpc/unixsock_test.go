package rpc

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/jsontest"
	"github.com/boxsh/boxsh/internal/tool"
)

func TestUnixPath(t *testing.T) {
	for addr, want := range map[string]struct {
		path string
		ok   bool
	}{
		"unix:/run/boxsh.sock": {"/run/boxsh.sock", true},
		"unix:rel.sock":        {"rel.sock", true},
		"unix:/a:b.sock":       {"/a:b.sock", true},
		"unix:":                {"", true},
		"127.0.0.1:8080":       {"", false},
		"unixhost:80":          {"", false},
	} {
		got, ok := UnixPath(addr)
		assert.Equal(t, want.path, got, addr)
		assert.Equal(t, want.ok, ok, addr)
	}
	_, err := Listen("unix:", HTTPOptions{})
	assert.EqualError(t, err, "listen unix:PATH: no path")
	assert.Equal(t, "http://unix:/run/b.sock:", BaseURL(&net.UnixAddr{Name: "/run/b.sock", Net: "unix"}))
	assert.Equal(t, "http://127.0.0.1:80", BaseURL(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}))
}

// unixClient is an HTTP client whose every connection goes to the socket
// at path.
func unixClient(path string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	return &http.Client{Transport: jsontest.Transport{Base: tr}}
}

// serveUnix serves a fake-backed server on a Unix socket at path; stop
// ends it and waits.
func serveUnix(t *testing.T, path string, opts HTTPOptions) (stop func()) {
	t.Helper()
	tools, err := tool.NewRegistry()
	require.NoError(t, err)
	s := &Server{Tools: tools, Backend: &fakeBackend{}, Name: "boxsh", Version: "test"}
	ln, err := Listen("unix:"+path, opts)
	require.NoError(t, err)
	assert.Equal(t, "http://unix:"+path+":", BaseURL(ln.Addr()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeStreamable(ctx, ln, opts) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("ServeStreamable did not return")
		}
	}
	t.Cleanup(stop)
	return stop
}

// postUnix sends a tools/list over the socket at path, with token if not
// "" and a Host no loopback check accepts, and returns the status.
func postUnix(t *testing.T, path, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://attacker.example/mcp", strings.NewReader(modernReq("1", "tools/list", "")))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modernHeaders("tools/list", "") {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := unixClient(path).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	_, err = io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode
}

// A Unix socket is made 0600 whatever the umask, needs no token (nor a
// loopback Host: no name reaches it), and is removed at shutdown.
func TestListenUnixNoToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxsh.sock")
	old := syscall.Umask(0)
	stop := serveUnix(t, path, HTTPOptions{})
	syscall.Umask(old)
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, fi.Mode().Type())
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the socket's mode is its access control")
	assert.Equal(t, http.StatusOK, postUnix(t, path, ""))
	stop()
	_, err = os.Lstat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "the socket is removed at shutdown")
}

// A token given is still asked for on a Unix socket.
func TestListenUnixToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxsh.sock")
	serveUnix(t, path, HTTPOptions{Token: testToken})
	assert.Equal(t, http.StatusUnauthorized, postUnix(t, path, ""))
	assert.Equal(t, http.StatusUnauthorized, postUnix(t, path, "wrong"))
	assert.Equal(t, http.StatusOK, postUnix(t, path, testToken))
}

// staleSocket leaves a socket at path that nobody accepts on, as a server
// killed leaves it.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
	_, err = net.Dial("unix", path)
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "a stale socket")
}

func TestListenUnixReplacesStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxsh.sock")
	staleSocket(t, path)
	serveUnix(t, path, HTTPOptions{})
	assert.Equal(t, http.StatusOK, postUnix(t, path, ""))
}

func TestListenUnixRefusesLive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxsh.sock")
	serveUnix(t, path, HTTPOptions{})
	_, err := Listen("unix:"+path, HTTPOptions{})
	require.ErrorIs(t, err, ErrSocketInUse)
	assert.EqualError(t, err, "another server is listening on unix:"+path)
	assert.Equal(t, http.StatusOK, postUnix(t, path, ""), "the live server goes on")
}

func TestListenUnixRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("keep\n"), 0o644))
	_, err := Listen("unix:"+file, HTTPOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a socket: refusing to replace it")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep\n", string(b), "a file that is not a socket is left as it was")

	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(file, link))
	_, err = Listen("unix:"+link, HTTPOptions{})
	require.Error(t, err, "a symbolic link is not a socket")
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link is left")

	_, err = Listen("unix:"+dir, HTTPOptions{})
	require.Error(t, err, "nor is a directory")
	_, err = os.Stat(dir)
	require.NoError(t, err)
}

// A socket replaced after the listener bound it is not the listener's to
// remove.
func TestListenUnixCloseLeavesAnother(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxsh.sock")
	ln, err := Listen("unix:"+path, HTTPOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(path))
	staleSocket(t, path)
	require.NoError(t, ln.Close())
	_, err = os.Lstat(path)
	require.NoError(t, err, "the other socket stays")
	require.NoError(t, ln.Close(), "a second close is the first's answer")
}
