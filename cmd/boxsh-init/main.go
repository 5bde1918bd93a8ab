// Command boxsh-init runs the boxsh tools.
//
// The boxsh front starts it, inside the sandbox when there is one, with a
// socket on fd 3. The socket carries calls and replies as length-prefixed JSON
// frames. boxsh-init hosts the worker pool for bash calls, the file tools and
// the terminal sessions.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"github.com/boxsh/boxsh/internal/fdpass"
	"github.com/boxsh/boxsh/internal/idle"
	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/starttrace"
	"github.com/boxsh/boxsh/internal/toolhost"
	"github.com/boxsh/boxsh/internal/toolhost/netfwd"
	"github.com/boxsh/boxsh/internal/toolhost/reap"
)

// version is set at build time with -ldflags "-X main.version=...", as
// boxsh's: the front refuses a boxsh-init of another build.
var version = "0.1.0-dev"

func main() {
	loadSeccomp()
	starttrace.Mark("init.main")
	if len(os.Args) > 2 && os.Args[1] == proc.LimitsFlag {
		os.Exit(runLimited(os.Args[2:]))
	}
	harden()
	if len(os.Args) > 1 && os.Args[1] == initproto.ExecFlag {
		// Goroutines blocked in waits: the command's, the reaper's.
		proc.ReserveProcs(2)
		os.Exit(runExec(os.Args[1:]))
	}
	os.Exit(run())
}

func run() int {
	o, err := initproto.ParseInitOptions(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: %v\n", err)
		return 2
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "boxsh-init", Level: hclog.LevelFromString(o.LogLevel), Output: os.Stderr})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signalsSet := proc.HandleStopSignals(func(os.Signal) { cancel() })
	var proxySock *net.UnixConn

	if o.ProxyFD > 0 {
		// Before anything else takes a descriptor: when the runtime gave
		// no proxy socket (a spec run by another runtime, which passes
		// only the descriptors asked for), the frame socket's duplicate
		// would get the proxy's number, and serveProxy would take it.
		// Without the proxy, commands have no way out: the network
		// namespace holds only loopback.
		var err error
		if proxySock, err = serveProxy(ctx, o.ProxyFD, o.ProxyListen); err != nil {
			log.Warn("no network proxy", "error", err)
		}
	}
	// The forwarding socket waits, open, for the front's hello to name it
	// (see initproto.Setup): no program started meanwhile may get it.
	proc.CloseInheritedOnExec()
	f := os.NewFile(uintptr(o.FD), "frames")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: fd %d is not the frame socket (boxsh-init is started by boxsh): %v\n", o.FD, err)
		return 2
	}
	defer conn.Close()

	// As PID 1 of a sandbox, boxsh-init inherits every orphan: it reaps
	// them, leaving the exit status of its own children to their Wait.
	var reaper *reap.Reaper
	if os.Getpid() == 1 {
		reaper = reap.New()
		go reaper.Run(ctx)
	}
	var rules []initproto.PolicyRule
	if o.RulesFile != "" {
		var err error
		if rules, err = toolhost.LoadPolicyRules(o.RulesFile); err != nil {
			log.Warn("policy rules", "error", err)
		}
	}
	// The fork-server library is installed beside boxsh-init (and bound
	// beside it in a sandbox).
	var forkServer string
	if exe, err := os.Executable(); err == nil {
		forkServer = proc.FindForkServer(exe)
	}
	a, err := toolhost.New(toolhost.Config{Build: version, Rules: rules, Shell: o.Shell, Workers: o.Workers, Log: log, Reaper: reaper, TimeoutDefault: o.TimeoutDefault, MaxOutput: int(o.MaxOutput),
		Limits: proc.Limits{Data: o.Memory, Procs: o.Pids}, LimitsExe: "/proc/self/exe", ForkServer: forkServer,
		Activity: idle.NewTrimmer(), Setup: func(s initproto.Setup) { setUp(ctx, s, proxySock, log) }})
	if err != nil {
		log.Error("start", "error", err)
		return 1
	}
	starttrace.Mark("init.toolhost")
	<-signalsSet
	// The tool server blocks no thread in a wait (the reaper answers
	// SIGCHLD, shells are waited for in the poller): spare Ps would only
	// have more threads look for work on the same cores. One P is enough
	// for its light work beside the commands', and keeps less runtime
	// metadata after a burst of calls (see proc.OneProc). Not before now:
	// the start's goroutines (the signals' set-up, the fork server's
	// start) run beside it on the other P.
	proc.OneProc()
	go func() {
		// Unblock Serve when a signal arrives.
		<-ctx.Done()
		conn.Close()
	}()
	// Serve returns when the front is gone (or has closed the channel),
	// having killed every command; boxsh-init then exits at once, without
	// waiting for calls that may be blocked in the kernel.
	if err := a.Serve(ctx, conn); err != nil && ctx.Err() == nil {
		// A front of another build says so itself (it reads this
		// boxsh-init's hello first); an older front got the error as
		// the answer to its call.
		var mismatch *initproto.MismatchError
		if errors.As(err, &mismatch) {
			log.Info("serve", "error", err)
		} else {
			log.Error("serve", "error", err)
		}
		return 1
	}
	return 0
}

// setUp applies what the front's hello tells besides the hello: it serves
// the forwarding socket of exposed ports, and captures the connections of
// programs that ignore the proxy variables (passing them on the proxy socket).
func setUp(ctx context.Context, s initproto.Setup, proxy *net.UnixConn, log hclog.Logger) {
	if proxy != nil && len(s.EgressPorts) > 0 {
		if err := serveEgress(ctx, proxy, s.EgressPorts); err != nil {
			log.Warn("no capture of connections", "error", err)
		}
	}
	if s.ForwardFD > 0 {
		if err := serveForward(ctx, s.ForwardFD); err != nil {
			log.Warn("no port forwarding", "error", err)
		}
	}
}

// runLimited is boxsh-init --limits SPEC -- COMMAND ARGS...: it sets the
// limits on itself and executes COMMAND, which inherits them (see
// proc.Limits.Wrap). It returns only on failure.
func runLimited(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "boxsh-init: usage: boxsh-init --limits SPEC -- COMMAND ARGS...")
		return 2
	}
	l, err := proc.ParseLimits(args[0])
	if err == nil {
		err = l.Apply()
	}
	argv := args[2:]
	path := argv[0]
	if err == nil {
		path, err = exec.LookPath(argv[0])
	}
	if err == nil {
		err = syscall.Exec(path, argv, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "boxsh-init: %s: %v\n", argv[0], err)
	return 126
}

// serveProxy exposes the front's network proxy on addr: each connection
// accepted there is passed, as a descriptor, on the proxy socket fd (see
// package internal/fdpass). It returns the socket.
func serveProxy(ctx context.Context, fd int, addr string) (*net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), "proxy")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("fd %d is not the proxy socket: %w", fd, err)
	}
	sock, ok := conn.(*net.UnixConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("fd %d is not the proxy socket: a %T", fd, conn)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		sock.Close()
		return nil, fmt.Errorf("proxy: %w", err)
	}
	go func() {
		_ = netfwd.Forward(ctx, l, func(c *net.TCPConn) error {
			return fdpass.Send(sock, c, fdpass.Header{Kind: fdpass.KindProxy})
		})
		sock.Close()
	}()
	return sock, nil
}

// serveEgress serves the sandbox's name service on netfwd.DNSListen and
// captures the connections to the addresses it gives, on ports, passing
// each on the proxy socket sock with its name and port (see netfwd.Egress).
func serveEgress(ctx context.Context, sock *net.UnixConn, ports []uint16) error {
	pc, err := net.ListenPacket("udp", netfwd.DNSListen)
	if err != nil {
		return fmt.Errorf("name service: %w", err)
	}
	l, err := net.Listen("tcp", netfwd.DNSListen)
	if err != nil {
		pc.Close()
		return fmt.Errorf("name service: %w", err)
	}
	e := &netfwd.Egress{Ports: ports, Pass: func(c *net.TCPConn, name string, port uint16) error {
		return fdpass.Send(sock, c, fdpass.Header{Kind: fdpass.KindCaptured, Name: name, Port: port})
	}}
	e.Start(ctx)
	go e.ServeDNS(ctx, pc, l)
	return nil
}

// serveForward connects the streams that the front opens on the forwarding
// socket fd to ports of the sandbox's loopback (see netfwd.ServeInbound).
//
// The front opens one stream per connection to a port it exposes.
func serveForward(ctx context.Context, fd int) error {
	f := os.NewFile(uintptr(fd), "forward")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("fd %d is not the forwarding socket: %w", fd, err)
	}
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	cfg.EnableKeepAlive = false
	session, err := yamux.Server(conn, cfg)
	if err != nil {
		conn.Close()
		return fmt.Errorf("forwarding session: %w", err)
	}
	go func() {
		_ = netfwd.ServeInbound(ctx, func() (net.Conn, error) { return session.Accept() })
		session.Close()
	}()
	return nil
}
