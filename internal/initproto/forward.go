package initproto

import (
	"encoding/binary"
	"fmt"
	"io"
)

// The forwarding socket (InitOptions.ForwardFD) carries a yamux session on
// which only the front opens streams, one per connection accepted on a
// port it exposes on the host. Each stream begins with ForwardHeader: the
// sandbox's TCP port to connect to on its own loopback. boxsh-init
// connects to 127.0.0.1:PORT inside the sandbox and copies both ways; it
// never connects anywhere else, and the front accepts no stream from it.

// ForwardHeaderSize is the size of ForwardHeader's encoding.
const ForwardHeaderSize = 2

// ForwardHeader encodes port, the sandbox's port a stream connects to.
func ForwardHeader(port uint16) []byte {
	return binary.BigEndian.AppendUint16(nil, port)
}

// ReadForwardHeader reads a stream's header and returns its port.
func ReadForwardHeader(r io.Reader) (uint16, error) {
	var b [ForwardHeaderSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("forward header: %w", err)
	}
	port := binary.BigEndian.Uint16(b[:])
	if port == 0 {
		return 0, fmt.Errorf("forward header: port 0")
	}
	return port, nil
}
