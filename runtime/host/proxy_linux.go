package host

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/fdpass"
	"github.com/boxsh/boxsh/policy"
)

// startProxy starts the network proxy of policy p for a sandbox.
//
// It returns the sandbox's end of the proxy socket, and the function that
// stops the proxy. That end is for boxsh-init, and the caller closes it in the
// parent once boxsh-init has started. The socket is a SOCK_SEQPACKET pair on
// which boxsh-init passes each connection it accepts (package
// internal/fdpass); the proxy serves what the front's end receives.
func startProxy(p policy.Policy, log hclog.Logger, hooks ProxyHooks) (child *os.File, stop func(), err error) {
	px, err := newProxy(p, log, hooks)
	if err != nil {
		return nil, nil, err
	}
	parent, child, err := packetPair()
	if err != nil {
		return nil, nil, err
	}
	conn, err := net.FileConn(parent)
	parent.Close()
	if err != nil {
		child.Close()
		return nil, nil, fmt.Errorf("proxy socket: %w", err)
	}
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		conn.Close()
		child.Close()
		return nil, nil, fmt.Errorf("proxy socket: a %T", conn)
	}
	l := fdpass.Listen(uc)
	var warned atomic.Bool
	l.Rejected = func(err error) {
		if warned.CompareAndSwap(false, true) {
			log.Warn("boxsh-init passed something other than a connection of the sandbox; dropped (later ones are logged at debug)", "error", err)
			return
		}
		log.Debug("dropped a passed descriptor", "error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = px.Serve(ctx, l); close(done) }()
	return child, func() { cancel(); l.Close(); <-done }, nil
}

// packetPair returns the two ends of a Unix SOCK_SEQPACKET socket pair, both
// close-on-exec.
func packetPair() (*os.File, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "proxy"), os.NewFile(uintptr(fds[1]), "proxy-init"), nil
}
