// Package proxy is boxsh's domain-allowlist network proxy.
//
// It runs in boxsh's front, outside the sandbox, and is the only way out of a
// sandbox in allowlist mode. The sandbox has a network namespace of its own
// with only loopback. There boxsh-init listens on 127.0.0.1 and passes each
// connection it accepts to the front as a descriptor (package
// internal/fdpass), whose listener a Server serves: the Server reads and
// writes the program's connection itself, and splices the bytes of tunnels
// and of large plain-HTTP bodies to the upstream connection in the kernel.
//
// # One listener, two protocols
//
// Commands in the sandbox get HTTP_PROXY and HTTPS_PROXY pointing at an HTTP
// proxy, and ALL_PROXY at a SOCKS5 one, both at the same address. A Server
// tells them apart by the first byte of each connection: 0x05 is the version
// byte of a SOCKS5 greeting, anything else is taken for an HTTP request line.
//
//   - Over HTTP it serves CONNECT (a tunnel, as for TLS) and plain HTTP
//     requests in absolute form ("GET http://host/path"). It forwards plain
//     requests to the origin, one request per client connection. A GET
//     without a body may go over an idle upstream connection that an
//     earlier request to the same host and port left, once decided anew;
//     a connection never carries a request for another destination.
//   - Over SOCKS5 it serves CONNECT without authentication. The proxy resolves
//     names ("socks5h"), so the sandbox needs no DNS.
//   - The connections boxsh-init captured from programs that ignore the
//     proxy variables come with the name and port the program looked up
//     (capturedConn): the program speaks to its destination, not to the
//     proxy. They are decided as any other CONNECT, on that name, and
//     recorded as protocol "transparent"; a refused one is reset. (A
//     SOCKS5 client offering the private method 0x80 is recorded so too.)
//
// # Decisions on names
//
// Rules decide on the host name the client asked for: the CONNECT target, the
// host of the request URL, the SOCKS5 destination. They never decide on a Host
// header or on an address the client resolved itself, and the proxy dials the
// very name it decided on.
//
// A pattern is an exact name or "*.example.com" for any subdomain, either with
// an optional ":port". Denied patterns win over allowed ones. Patterns that
// would open a whole public suffix ("*.com", "*.co.uk", "*.github.io", by the
// public suffix list) are refused as too broad. An IP address is refused
// unless a pattern names it exactly, so a command cannot go around the name
// rules.
//
// Every decision is logged at Info as one line with the fields host, port,
// protocol (http, connect, socks5 or transparent), allowed and rule. The first
// refusal of each host is also logged at Warn, in one line that says how to
// allow it.
//
// A refused HTTP request or CONNECT gets 403, with the reason as the status
// text, for example "403 boxsh: example.org is not allowed (run with
// --allow-domain example.org)". The status text matters because a client that
// fails a CONNECT shows only the status line. The body names the destination
// and the setting that would allow it. A refused SOCKS5 request gets
// "connection not allowed by ruleset".
//
// Server.Decided is told every decision, whatever the protocol; a refusal
// comes with its reason and the setting that would allow it, in the terms
// of the 403. Refusals keeps the recent ones, deduplicated and numbered, so
// that the front can tell a tool's result which were made while it ran.
//
// # Limits
//
// A sandbox must not be able to exhaust the front:
//
//   - A Server serves at most MaxConns connections at once. Beyond that, a few
//     more get a prompt refusal (503, or a SOCKS5 general failure) and the
//     rest are closed at once, so nothing queues.
//   - A client has HeaderTimeout to send its request header or SOCKS5
//     handshake, which may not exceed 64 KiB.
//   - A tunnel or a forwarded request is closed after IdleTimeout without
//     traffic either way.
//   - Data are copied through pooled fixed-size buffers.
//
// When the context given to Serve ends, Serve closes the listener and every
// connection, and returns.
package proxy
