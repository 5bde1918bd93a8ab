package launch

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve runs Serve on one end of a socket pair and returns the other end,
// and the channel of Serve's result.
func serve(t *testing.T) (*conn, chan error) {
	t.Helper()
	front, back, err := socketPair()
	require.NoError(t, err)
	c, err := newConn(front)
	front.Close()
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	done := make(chan error, 1)
	go func() { done <- Serve(back, "test-build", io.Discard) }()
	return c, done
}

// result waits for Serve's result.
func result(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
		return nil
	}
}

// raw writes b as it is.
func raw(t *testing.T, c *conn, b []byte) {
	t.Helper()
	_, err := c.c.Write(b)
	require.NoError(t, err)
}

func frame(body string) []byte {
	b := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	return append(b, body...)
}

// TestServeMalformed checks that a message that breaks the protocol ends the
// launcher with an error, told to the front first.
func TestServeMalformed(t *testing.T) {
	startJSON := func(mutate func(*StartRequest)) string {
		r := StartRequest{Protocol: ProtocolVersion, Version: "test-build", Root: "/nonexistent", ID: "state", Config: json.RawMessage(`{}`), Args: []string{"/bin/true"}}
		mutate(&r)
		b, err := json.Marshal(Message{Op: OpStart, Start: &r})
		require.NoError(t, err)
		return string(b)
	}
	for _, tc := range []struct {
		name string
		msg  []byte
		want string
	}{
		{"zero length", frame(""), "length 0"},
		{"too long", []byte{0xff, 0xff, 0xff, 0xff}, "length"},
		{"not JSON", frame("{nope"), "malformed"},
		{"exec before start", frame(`{"op":"exec"}`), `"exec" before "start"`},
		{"start without its request", frame(`{"op":"start"}`), "without its request"},
		{"names without descriptors", frame(`{"op":"start","files":["stdin"]}`), "1 names"},
		{"relative state root", frame(startJSON(func(r *StartRequest) { r.Root = "state" })), "state root"},
		{"id with a slash", frame(startJSON(func(r *StartRequest) { r.ID = "../x" })), "state root"},
		{"no command", frame(startJSON(func(r *StartRequest) { r.Args = nil })), "no command"},
		{"config not JSON of a config", frame(startJSON(func(r *StartRequest) { r.Config = json.RawMessage(`[1]`) })), "config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, done := serve(t)
			raw(t, c, tc.msg)
			err := result(t, done)
			require.Error(t, err)
			assert.ErrorIs(t, err, errMalformed)
			assert.Contains(t, err.Error(), tc.want)
			m, _, rerr := c.recv()
			require.NoError(t, rerr, "the front is told")
			assert.Equal(t, OpError, m.Op)
			assert.Contains(t, m.Error, tc.want)
		})
	}
}

// TestServeUnknownDescriptor checks that a descriptor of no known name is
// refused, and that the launcher holds none of the descriptors after.
func TestServeUnknownDescriptor(t *testing.T) {
	c, done := serve(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	req := StartRequest{Protocol: ProtocolVersion, Version: "test-build", Root: "/nonexistent", ID: "state", Config: json.RawMessage(`{}`), Args: []string{"/bin/true"}}
	require.NoError(t, c.send(&Message{Op: OpStart, Start: &req, Files: []string{"fd9"}}, []*os.File{r}))
	r.Close()
	err = result(t, done)
	assert.ErrorIs(t, err, errMalformed)
	assert.Contains(t, err.Error(), `descriptor "fd9"`)
	// The read end is closed everywhere: a write fails.
	_, err = w.Write([]byte("x"))
	assert.ErrorIs(t, err, syscall.EPIPE)
}

// TestServeRefusesAnotherBuild checks that a front of another build or
// protocol is refused with an error that names both, and that the launcher
// then ends at the socket's end.
func TestServeRefusesAnotherBuild(t *testing.T) {
	for _, tc := range []struct {
		req  StartRequest
		want string
	}{
		{StartRequest{Protocol: ProtocolVersion, Version: "other-build"}, "the sandbox's launcher is build test-build, the front other-build"},
		{StartRequest{Protocol: ProtocolVersion + 1, Version: "test-build"}, "protocol"},
	} {
		c, done := serve(t)
		req := tc.req
		require.NoError(t, c.send(&Message{Op: OpStart, Start: &req}, nil))
		m, _, err := c.recv()
		require.NoError(t, err)
		assert.Equal(t, OpError, m.Op)
		assert.Contains(t, m.Error, tc.want)
		require.NoError(t, c.c.CloseWrite())
		assert.NoError(t, result(t, done), "the socket's end ends it")
	}
}

// TestServeEOF checks that the launcher ends at once, without error, when the
// front goes before asking anything.
func TestServeEOF(t *testing.T) {
	c, done := serve(t)
	c.Close()
	assert.NoError(t, result(t, done))
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-launch")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return p
}

// TestLauncherDies checks that a front whose launcher dies gets an error that
// names the launcher and how it ended, from the start and from Wait.
func TestLauncherDies(t *testing.T) {
	p := script(t, "exec 3<&-; echo dying >&2; exit 7")
	var stderr strings.Builder
	l, err := Start(p, &stderr)
	require.NoError(t, err)
	_, err = l.StartSandbox(StartRequest{Args: []string{"x"}}, Process{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the sandbox's launcher "+p+" died: exit status 7")
	select {
	case <-l.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("Exited not closed after the launcher died")
	}
	code, err := l.Wait()
	assert.Equal(t, 1, code)
	assert.ErrorContains(t, err, p)
	assert.False(t, l.Destroy(), "no launcher left to say it destroyed the sandbox")
	assert.Contains(t, stderr.String(), "dying")
}

// TestLauncherKilled checks that a launcher killed while the sandbox runs
// ends the front's wait with an error naming it.
func TestLauncherKilled(t *testing.T) {
	p := script(t, "exec sleep 30")
	l, err := Start(p, io.Discard)
	require.NoError(t, err)
	require.NoError(t, l.cmd.Process.Signal(syscall.SIGKILL))
	code, err := l.Wait()
	assert.Equal(t, 1, code)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the sandbox's launcher "+p+" died: signal: killed")
	_, err = l.Exec()
	assert.ErrorContains(t, err, p)
	assert.ErrorContains(t, l.Signal(syscall.SIGTERM), p)
}

// TestLauncherMissing checks the error of a launcher that is not there: it
// names the path.
func TestLauncherMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "boxsh-launch")
	_, err := Start(p, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), p)
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
}

// TestLauncherProtocolBroken checks that a launcher that answers what was not
// asked is killed, with an error that says so.
func TestLauncherProtocolBroken(t *testing.T) {
	// A reply before any request: frame {"op":"started"} on fd 3.
	p := script(t, `printf '\000\000\000\020{"op":"started"}' >&3; exec sleep 30`)
	l, err := Start(p, io.Discard)
	require.NoError(t, err)
	// The unasked reply waits in the queue, and is taken as the answer
	// to the exec: a reply of the wrong operation, refused.
	_, err = l.Exec()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"started" where "execed" was due`)
	l.Destroy()
	select {
	case <-l.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the launcher was not stopped")
	}
}

// TestDestroyUnstarted checks that a launcher never asked to start a sandbox
// ends at its socket's end.
func TestDestroyUnstarted(t *testing.T) {
	p := script(t, "exec cat <&3 >/dev/null")
	l, err := Start(p, io.Discard)
	require.NoError(t, err)
	assert.True(t, l.Destroy())
	select {
	case <-l.Done():
	default:
		t.Fatal("Destroy returned before the launcher ended")
	}
}
