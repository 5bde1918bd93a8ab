package client

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnixBase(t *testing.T) {
	for base, want := range map[string]string{
		"http://unix:/run/boxsh.sock:":  "/run/boxsh.sock",
		"http://unix:/run/boxsh.sock:/": "/run/boxsh.sock",
		"http://unix:/a:b.sock:":        "/a:b.sock",
		"http://unix::":                 "",
		"http://unix:/run/boxsh.sock":   "",
		"http://127.0.0.1:8080":         "",
	} {
		got, ok := unixBase(base)
		assert.Equal(t, want, got, base)
		assert.Equal(t, want != "", ok, base)
	}
}

// A Server at http://unix:PATH: reaches the server on that socket; once
// the socket is gone its calls are ErrSandboxUnavailable.
func TestServerOnUnixSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxsh.sock")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	hosts := make(chan string, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sandboxes":[{"name":"a"}]}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	for _, hc := range []*http.Client{nil, {}, {Transport: http.DefaultTransport}} {
		s := NewServer("http://unix:"+path+":", "tok", hc)
		list, err := s.List(context.Background())
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, "a", list[0].Name)
		assert.Equal(t, "localhost", <-hosts, "a loopback Host")
	}

	require.NoError(t, srv.Close())
	_, err = os.Lstat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = NewServer("http://unix:"+path+":", "tok", nil).List(context.Background())
	assert.ErrorIs(t, err, ErrSandboxUnavailable, "a socket removed is a server down")
}
