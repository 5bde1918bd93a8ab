package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/splice"
	"github.com/boxsh/boxsh/internal/tool"
)

// forwardSession is the front's side of the forwarding socket fwd (see
// initproto.ForwardHeader): it opens the streams, and refuses every stream
// boxsh-init would open.
func forwardSession(fwd *os.File) (*yamux.Session, error) {
	c, err := net.FileConn(fwd)
	fwd.Close()
	if err != nil {
		return nil, fmt.Errorf("forwarding socket: %w", err)
	}
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	cfg.EnableKeepAlive = false
	s, err := yamux.Client(c, cfg)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("forwarding session: %w", err)
	}
	go func() {
		for {
			st, err := s.Accept()
			if err != nil {
				return
			}
			st.Close()
		}
	}()
	return s, nil
}

// exposed is a port of the sandbox the front listens for.
type exposed struct {
	info tool.PortInfo
	l    net.Listener
	// done is closed with the port.
	done   chan struct{}
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

// ForwardConns bounds the connections to its exposed ports that a sandbox may
// have open at once, when its forwards are bounded (Config.MaxForwards). Past
// it, the front accepts no more until one ends; they wait in the listeners'
// backlogs.
const ForwardConns = 64

// Ports are the exposed ports of a sandbox.
//
// The front listens on the host's loopback, and connects each connection to a
// port of the sandbox's loopback with its dialer. The Supervisor has one
// Ports; shell mode makes its own (NewPorts).
type Ports struct {
	dial func(port int) (net.Conn, error)
	log  hclog.Logger

	// max, if above 0, bounds the ports exposed at once, and conns
	// (ForwardConns places) the connections to them.
	max   int
	conns chan struct{}

	mu     sync.Mutex
	byPort map[int]*exposed
	closed bool
	// onClose, if set, runs at the end of Close.
	onClose func()
}

// bound sets the most ports p exposes at once (none when n is 0).
func (p *Ports) bound(n int) {
	if n > 0 {
		p.max = n
		p.conns = make(chan struct{}, ForwardConns)
	}
}

// NewPorts returns the exposed ports of a sandbox started with the forwarding
// socket fwd, whose other end boxsh-init serves.
//
// Each connection is a stream of a yamux session on fwd (see
// initproto.ForwardHeader), and NewPorts takes fwd over. A nil fwd connects to
// the host's own loopback, for macOS, whose sandbox shares the host's network.
// Close closes the session too.
func NewPorts(fwd *os.File, log hclog.Logger) (*Ports, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if fwd == nil {
		return &Ports{dial: dialLoopback, log: log}, nil
	}
	s, err := forwardSession(fwd)
	if err != nil {
		return nil, err
	}
	p := &Ports{dial: func(port int) (net.Conn, error) { return openForward(s, port) }, log: log}
	p.onClose = func() { s.Close() }
	return p, nil
}

// Expose listens on 127.0.0.1:hostPort (0: a free port) and connects each
// connection to 127.0.0.1:port inside the sandbox's network namespace.
func (p *Ports) Expose(port, hostPort int) (tool.PortInfo, error) {
	if port < 1 || port > 65535 {
		return tool.PortInfo{}, fmt.Errorf("port %d: must be 1-65535", port)
	}
	if hostPort < 0 || hostPort > 65535 {
		return tool.PortInfo{}, fmt.Errorf("host_port %d: must be 0-65535", hostPort)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return tool.PortInfo{}, errors.New("boxsh is stopping")
	}
	if e, ok := p.byPort[port]; ok {
		return tool.PortInfo{}, fmt.Errorf("port %d is already exposed at %s", port, e.info.Address)
	}
	if p.max > 0 && len(p.byPort) >= p.max {
		return tool.PortInfo{}, fmt.Errorf("port %d: %w: %d ports are exposed, the sandbox's limit (set by --sandbox-forwards %d); unexpose one first", port, ErrForwardLimit, len(p.byPort), p.max)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)))
	if err != nil {
		if outOfDescriptors(err) {
			return tool.PortInfo{}, fmt.Errorf("listen on the host: the server has no file descriptor left; retry later: %w", err)
		}
		return tool.PortInfo{}, fmt.Errorf("listen on the host: %w", err)
	}
	addr := l.Addr().(*net.TCPAddr)
	e := &exposed{info: tool.PortInfo{Port: port, HostPort: addr.Port, Address: addr.String()}, l: l, done: make(chan struct{}), conns: map[net.Conn]bool{}}
	if p.byPort == nil {
		p.byPort = map[int]*exposed{}
	}
	p.byPort[port] = e
	go p.serve(e)
	p.log.Info("port exposed", "port", port, "address", e.info.Address)
	return e.info, nil
}

// Unexpose stops listening for port and closes its connections.
func (p *Ports) Unexpose(port int) (tool.PortInfo, error) {
	p.mu.Lock()
	e, ok := p.byPort[port]
	delete(p.byPort, port)
	p.mu.Unlock()
	if !ok {
		return tool.PortInfo{}, fmt.Errorf("port %d is not exposed", port)
	}
	e.close()
	return e.info, nil
}

// List lists the exposed ports by sandbox port.
func (p *Ports) List() []tool.PortInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]tool.PortInfo, 0, len(p.byPort))
	for _, e := range p.byPort {
		out = append(out, e.info)
	}
	slices.SortFunc(out, func(a, b tool.PortInfo) int { return a.Port - b.Port })
	return out
}

// Close stops listening for every port, for good.
func (p *Ports) Close() {
	p.mu.Lock()
	p.closed = true
	all := p.byPort
	p.byPort = nil
	p.mu.Unlock()
	for _, e := range all {
		e.close()
	}
	if p.onClose != nil {
		p.onClose()
	}
}

func (e *exposed) close() {
	e.l.Close()
	e.mu.Lock()
	if !e.closed {
		close(e.done)
	}
	e.closed = true
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
}

// track records an open connection of e, or tells that e is closed.
func (e *exposed) track(c net.Conn, open bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !open {
		delete(e.conns, c)
		return true
	}
	if e.closed {
		return false
	}
	e.conns[c] = true
	return true
}

// serve accepts e's connections until e is closed. With a bound, it
// accepts one only when a place is free; an accept that fails for want of
// descriptors is retried after a pause rather than ending the port.
func (p *Ports) serve(e *exposed) {
	var pause time.Duration
	for {
		if !p.takeConn(e) {
			return
		}
		c, err := e.l.Accept()
		if err != nil {
			p.giveConn()
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			if !acceptAgain(e, err, pause) {
				return
			}
			if pause == 5*time.Millisecond { // once a streak
				p.log.Warn("exposed port: accept", "port", e.info.Port, "error", err)
			}
			continue
		}
		pause = 0
		go func() {
			defer p.giveConn()
			defer c.Close()
			if !e.track(c, true) {
				return
			}
			defer e.track(c, false)
			st, err := p.dial(e.info.Port)
			if err != nil {
				p.log.Debug("exposed port: no connection", "port", e.info.Port, "error", err)
				return
			}
			defer st.Close()
			splice.Conns(c, st)
		}()
	}
}

// takeConn waits for a place for one more connection (always one without
// a bound), or reports that e was closed meanwhile.
func (p *Ports) takeConn(e *exposed) bool {
	if p.conns == nil {
		return true
	}
	select {
	case p.conns <- struct{}{}:
		return true
	case <-e.done:
		return false
	}
}

// giveConn gives back the place of a connection that has ended.
func (p *Ports) giveConn() {
	if p.conns != nil {
		<-p.conns
	}
}

// acceptAgain waits pause before the next accept after err, or reports
// that e is closed (or err is not one to retry).
func acceptAgain(e *exposed, err error, pause time.Duration) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.done:
		return false
	}
}

// ErrForwardLimit refuses an expose past the sandbox's bound
// (Config.MaxForwards).
var ErrForwardLimit = errors.New("too many exposed ports")

// outOfDescriptors reports whether err is the process's or the system's
// want of file descriptors.
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// Expose exposes a port of the sandbox (see Ports.Expose).
func (s *Supervisor) Expose(port, hostPort int) (tool.PortInfo, error) {
	return s.ports.Expose(port, hostPort)
}

// Unexpose stops exposing port (see Ports.Unexpose).
func (s *Supervisor) Unexpose(port int) (tool.PortInfo, error) { return s.ports.Unexpose(port) }

// Ports lists the exposed ports by sandbox port.
func (s *Supervisor) Ports() []tool.PortInfo { return s.ports.List() }

// dialExposed connects to port of the sandbox's loopback.
//
// It goes through the current boxsh-init's forwarding socket. A boxsh-init
// that has none (macOS, whose sandbox shares the host's network) is reached
// directly.
func (s *Supervisor) dialExposed(port int) (net.Conn, error) {
	in, err := s.instance(context.Background())
	if err != nil {
		return nil, err
	}
	if in.fwd == nil {
		return dialLoopback(port)
	}
	return openForward(in.fwd, port)
}

// dialLoopback connects to port of the host's loopback.
func dialLoopback(port int) (net.Conn, error) {
	return net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// openForward opens the stream of a connection to port on the forwarding
// session s.
func openForward(s *yamux.Session, port int) (net.Conn, error) {
	st, err := s.Open()
	if err != nil {
		return nil, err
	}
	if _, err := st.Write(initproto.ForwardHeader(uint16(port))); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// frontTools are the handlers of the tools the front runs for a sandbox
// (but audit, which the audit log's backend answers), each registered by
// the file that implements it.
var frontTools = tool.NewMux[*Supervisor, tool.Result](tool.SandboxSet, tool.Front, func(name string, args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return &initproto.Error{Code: initproto.CodeInvalidParams, Message: name + " tool: invalid arguments: " + err.Error()}
	}
	return nil
})

// FrontTools returns the names of the tools whose handlers the runtime
// holds (see Supervisor.Start).
func FrontTools() []string { return frontTools.Names() }

// The tools of port forwarding.
func init() {
	tool.Handle(frontTools, tool.ExposeDef, func(_ context.Context, s *Supervisor, a tool.ExposeArgs) (tool.Result, error) {
		info, err := s.Expose(a.Port, a.HostPort)
		return result(tool.Expose, info, err), nil
	})
	tool.Handle(frontTools, tool.UnexposeDef, func(_ context.Context, s *Supervisor, a tool.UnexposeArgs) (tool.Result, error) {
		info, err := s.Unexpose(a.Port)
		return result(tool.Unexpose, info, err), nil
	})
	tool.Handle(frontTools, tool.PortsDef, func(_ context.Context, s *Supervisor, _ tool.NoArgs) (tool.Result, error) {
		return tool.StructuredResult(tool.PortsOutput{Ports: s.Ports()}), nil
	})
}

// frontTool runs a call of a tool the front itself runs, and tells whether
// name is one.
func (s *Supervisor) frontTool(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) bool {
	h, ok := frontTools.Lookup(name)
	if !ok {
		return false
	}
	r, err := h(ctx, s, args)
	if err != nil {
		done(nil, err)
		return true
	}
	b, err := json.Marshal(r)
	done(b, err)
	return true
}

// result is the tool result of v, or of err.
func result[T any](name string, v T, err error) tool.Result {
	if err != nil {
		return tool.Errorf("%s: %v", name, err)
	}
	return tool.StructuredResult(v)
}
