package proxy

// socksCaptured is the SOCKS5 method of a captured connection: one that
// boxsh-init took from a program that ignores the proxy variables (see
// package internal/toolhost/netfwd). It is a private method (0x80 to 0xfe)
// without sub-negotiation. It gives the connection no more than a plain
// SOCKS5 CONNECT: the proxy decides on the same name and port, and only
// records the protocol as "transparent".
const socksCaptured = 0x80

// socksMethod picks the method of a SOCKS5 greeting that offers methods, and
// names the protocol its decisions record. socksCaptured goes first, then no
// authentication; without either it returns socksNoAcceptable.
func socksMethod(methods []byte) (method byte, protocol string) {
	method, protocol = socksNoAcceptable, ""
	for _, m := range methods {
		switch {
		case m == socksCaptured:
			return socksCaptured, "transparent"
		case m == socksNoAuth:
			method, protocol = socksNoAuth, "socks5"
		}
	}
	return method, protocol
}
