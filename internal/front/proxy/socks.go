package proxy

import (
	"context"
	"encoding/binary"
	"io"
	"net/netip"
)

// SOCKS5 (RFC 1928).
const (
	socks5Version = 0x05

	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff

	socksConnect = 0x01

	socksIPv4   = 0x01
	socksDomain = 0x03
	socksIPv6   = 0x04

	socksSucceeded        = 0x00
	socksGeneralFailure   = 0x01
	socksNotAllowed       = 0x02
	socksNetUnreachable   = 0x03
	socksHostUnreachable  = 0x04
	socksConnRefused      = 0x05
	socksCmdNotSupported  = 0x07
	socksAddrNotSupported = 0x08
)

// serveSOCKS serves a SOCKS5 client on c, whose bytes r reads (from the
// version byte on, unbuffered, so nothing is read ahead of the tunnel).
func (srv *server) serveSOCKS(ctx context.Context, c *conn, r io.Reader, busy bool) {
	// Greeting: version, number of methods, methods.
	var buf [4]byte
	if _, err := io.ReadFull(r, buf[:2]); err != nil {
		return
	}
	methods := make([]byte, buf[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return
	}
	method, protocol := socksMethod(methods)
	if method == socksNoAcceptable {
		_, _ = c.Write([]byte{socks5Version, socksNoAcceptable})
		return
	}
	if _, err := c.Write([]byte{socks5Version, method}); err != nil {
		return
	}

	// Request: version, command, reserved, address type, address, port.
	if _, err := io.ReadFull(r, buf[:4]); err != nil || buf[0] != socks5Version {
		return
	}
	cmd := buf[1]
	var host string
	switch buf[3] {
	case socksIPv4, socksIPv6:
		ip := make([]byte, 4)
		if buf[3] == socksIPv6 {
			ip = make([]byte, 16)
		}
		if _, err := io.ReadFull(r, ip); err != nil {
			return
		}
		addr, _ := netip.AddrFromSlice(ip)
		host = addr.String()
	case socksDomain:
		if _, err := io.ReadFull(r, buf[:1]); err != nil {
			return
		}
		name := make([]byte, buf[0])
		if _, err := io.ReadFull(r, name); err != nil {
			return
		}
		host = string(name)
	default:
		socksReply(c, socksAddrNotSupported)
		return
	}
	if _, err := io.ReadFull(r, buf[:2]); err != nil {
		return
	}
	port := int(binary.BigEndian.Uint16(buf[:2]))
	c.limit = -1

	switch {
	case busy:
		socksReply(c, socksGeneralFailure)
		return
	case cmd != socksConnect:
		socksReply(c, socksCmdNotSupported)
		return
	}
	d := srv.decideWith(ctx, c, host, port, protocol, func(d *decision) { srv.opaque(d) })
	if !d.allowed {
		socksReply(c, socksNotAllowed)
		return
	}
	if srv.terminates(d.host, d.port) {
		if socksReply(c, socksSucceeded) == nil {
			srv.terminate(ctx, c, nil, d, protocol)
		}
		return
	}
	up, closeUp, err := srv.dial(ctx, d, protocol)
	if err != nil {
		socksReply(c, socksFailure(err))
		return
	}
	defer closeUp()
	if err := socksReply(c, socksSucceeded); err != nil {
		return
	}
	tunnel(c, up, nil, srv.IdleTimeout)
}

// socksReply writes a reply with code rep. The bound address is always
// 0.0.0.0:0: clients have no use for it, and it would tell the sandbox
// the host's address.
func socksReply(c *conn, rep byte) error {
	_, err := c.Write([]byte{socks5Version, rep, 0, socksIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

// socksFailure is the reply code for an upstream failure err.
func socksFailure(err error) byte {
	switch classify(err) {
	case failRefused:
		return socksConnRefused
	case failUnreachable, failTimeout:
		return socksHostUnreachable
	case failNetwork:
		return socksNetUnreachable
	}
	return socksGeneralFailure
}
