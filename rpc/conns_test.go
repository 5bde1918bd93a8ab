package rpc

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawGet sends GET /mcp on c and reads the answer's status line, leaving
// c kept alive.
func rawGet(t *testing.T, c net.Conn, r *bufio.Reader, within time.Duration) (*http.Response, error) {
	t.Helper()
	_, err := io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+testToken+"\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(within)))
	res, err := http.ReadResponse(r, nil)
	if err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	return res, err
}

// TestHTTPMaxConns checks that with MaxConns the server holds at most that
// many connections. Idle kept-alive ones are closed to make room.
// Connections that hold a place without a request make the next one
// wait, unserved, until one closes.
func TestHTTPMaxConns(t *testing.T) {
	url, _ := httpServer(t, HTTPOptions{Token: testToken, MaxConns: 2})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	// Two kept alive, idle after their answer.
	var idle []*bufio.Reader
	var idleConns []net.Conn
	for range 2 {
		c, r := dial()
		res, err := rawGet(t, c, r, 10*time.Second)
		require.NoError(t, err)
		assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
		idle, idleConns = append(idle, r), append(idleConns, c)
	}
	c, r := dial()
	res, err := rawGet(t, c, r, 10*time.Second)
	require.NoError(t, err, "served: the idle ones made room")
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
	for i, r := range idle {
		require.NoError(t, idleConns[i].SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := r.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "idle connection %d closed", i)
	}
	c.Close()

	// Two that send nothing hold both places.
	s1, _ := dial()
	dial()
	// Each has been accepted once a third is not.
	waiting, wr := dial()
	_, err = rawGet(t, waiting, wr, 300*time.Millisecond)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "not served while both places are held: %v", err)
	s1.Close()
	require.NoError(t, waiting.SetReadDeadline(time.Now().Add(10*time.Second)))
	res, err = http.ReadResponse(wr, nil)
	require.NoError(t, err, "served once a place was freed")
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
}
