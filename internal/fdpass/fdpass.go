// Package fdpass passes the sandbox's TCP connections from boxsh-init to the
// front's proxy as descriptors, so that their bytes go between the two sides
// of the proxy in the kernel, not through boxsh-init and a multiplexer.
//
// The proxy socket is a Unix SOCK_SEQPACKET socket. Each message on it is a
// Header and, as SCM_RIGHTS, exactly one descriptor: a TCP connection that
// boxsh-init accepted on one of its listeners of the sandbox's loopback.
// boxsh-init sends them (Send); the front receives them (Listener), checks
// each descriptor and drops what is not such a connection. boxsh-init is as
// untrusted as the sandbox: the front takes a passed connection for a byte
// stream to the sandbox, no more, and never takes a destination from it but
// from the proxy's decision on the name.
package fdpass

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Kinds of passed connections.
const (
	// KindProxy is a connection to the proxy listener of the sandbox's
	// loopback: the program speaks the proxy's protocols (HTTP, SOCKS5).
	KindProxy byte = 1
	// KindCaptured is a connection captured by name (see
	// internal/toolhost/netfwd.Egress): the program speaks to Name:Port.
	KindCaptured byte = 2
)

// MaxHeaderSize bounds a Header's encoding.
const MaxHeaderSize = 4 + 255

// A Header tells the front what a passed connection is.
type Header struct {
	Kind byte
	// Name and Port are the destination of a captured connection, as the
	// program named them (the proxy decides on them); empty and 0 for
	// KindProxy.
	Name string
	Port uint16
}

// errHeader reports a malformed header.
var errHeader = errors.New("fdpass: malformed header")

// Append appends h's encoding to b: the kind, the port (big-endian), the
// length of the name and the name.
func (h Header) Append(b []byte) ([]byte, error) {
	switch h.Kind {
	case KindProxy:
		if h.Name != "" || h.Port != 0 {
			return nil, fmt.Errorf("%w: a proxy connection names no destination", errHeader)
		}
	case KindCaptured:
		if h.Name == "" || len(h.Name) > 255 || h.Port == 0 {
			return nil, fmt.Errorf("%w: a captured connection names a name of 1 to 255 bytes and a port", errHeader)
		}
	default:
		return nil, fmt.Errorf("%w: kind %d", errHeader, h.Kind)
	}
	b = append(b, h.Kind)
	b = binary.BigEndian.AppendUint16(b, h.Port)
	b = append(b, byte(len(h.Name)))
	return append(b, h.Name...), nil
}

// ParseHeader decodes a whole message's header.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < 4 || len(b) != 4+int(b[3]) {
		return Header{}, fmt.Errorf("%w: %d bytes", errHeader, len(b))
	}
	h := Header{Kind: b[0], Port: binary.BigEndian.Uint16(b[1:3]), Name: string(b[4:])}
	if _, err := h.Append(nil); err != nil {
		return Header{}, err
	}
	return h, nil
}

// Send passes c's descriptor to the front on sock with h. The front gets a
// descriptor of its own: the caller still closes c.
func Send(sock *net.UnixConn, c syscall.Conn, h Header) error {
	msg, err := h.Append(make([]byte, 0, MaxHeaderSize))
	if err != nil {
		return err
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("fdpass: %w", err)
	}
	var werr error
	if err := rc.Control(func(fd uintptr) {
		_, _, werr = sock.WriteMsgUnix(msg, syscall.UnixRights(int(fd)), nil)
	}); err != nil {
		return fmt.Errorf("fdpass: %w", err)
	}
	if werr != nil {
		return fmt.Errorf("fdpass: send: %w", werr)
	}
	return nil
}

// A Captured connection is a passed connection of KindCaptured, to Name:Port
// as the program named them.
type Captured struct {
	*net.TCPConn
	Name string
	Port uint16
}

// Destination is where the program meant to connect: the name and port the
// proxy decides on.
func (c *Captured) Destination() (string, int) { return c.Name, int(c.Port) }

// TCP is the connection to the sandbox's program.
func (c *Captured) TCP() *net.TCPConn { return c.TCPConn }
