package runtime

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/runtime/host"
)

// The front's side of the forwarding socket accepts no stream from
// boxsh-init: a stream it opens is closed at once, so that nothing in the
// sandbox can make the front connect anywhere.
func TestForwardSessionRefusesStreams(t *testing.T) {
	front, back, err := host.SocketPair()
	require.NoError(t, err)
	s, err := forwardSession(front)
	require.NoError(t, err)
	defer s.Close()
	c, err := net.FileConn(back)
	back.Close()
	require.NoError(t, err)
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	init, err := yamux.Server(c, cfg)
	require.NoError(t, err)
	defer init.Close()
	st, err := init.Open()
	require.NoError(t, err)
	_, _ = st.Write([]byte{0, 80, 'G', 'E', 'T'})
	require.NoError(t, st.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, err := st.Read(make([]byte, 16))
	assert.Zero(t, n)
	assert.ErrorIs(t, err, io.EOF, "the front closed the stream")
}
