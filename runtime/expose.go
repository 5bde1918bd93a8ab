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

	"github.com/hashicorp/yamux"

	"github.com/boxsh/boxsh/frame"
	"github.com/boxsh/boxsh/internal/splice"
	"github.com/boxsh/boxsh/tool"
)

// forwardSession is the front's side of the forwarding socket fwd (see
// frame.ForwardHeader): it opens the streams, and refuses every stream
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
	info   tool.PortInfo
	l      net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

// ports are the exposed ports of a Supervisor.
type ports struct {
	mu     sync.Mutex
	byPort map[int]*exposed
	closed bool
}

// Expose listens on 127.0.0.1:hostPort (0: a free port) and connects each
// connection to 127.0.0.1:port inside boxsh-init's network namespace (the
// sandbox's), through the current boxsh-init.
func (s *Supervisor) Expose(port, hostPort int) (tool.PortInfo, error) {
	if port < 1 || port > 65535 {
		return tool.PortInfo{}, fmt.Errorf("port %d: must be 1-65535", port)
	}
	if hostPort < 0 || hostPort > 65535 {
		return tool.PortInfo{}, fmt.Errorf("host_port %d: must be 0-65535", hostPort)
	}
	s.ports.mu.Lock()
	defer s.ports.mu.Unlock()
	if s.ports.closed {
		return tool.PortInfo{}, errors.New("boxsh is stopping")
	}
	if e, ok := s.ports.byPort[port]; ok {
		return tool.PortInfo{}, fmt.Errorf("port %d is already exposed at %s", port, e.info.Address)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)))
	if err != nil {
		return tool.PortInfo{}, fmt.Errorf("listen on the host: %w", err)
	}
	addr := l.Addr().(*net.TCPAddr)
	e := &exposed{info: tool.PortInfo{Port: port, HostPort: addr.Port, Address: addr.String()}, l: l, conns: map[net.Conn]bool{}}
	if s.ports.byPort == nil {
		s.ports.byPort = map[int]*exposed{}
	}
	s.ports.byPort[port] = e
	go s.serveExposed(e)
	s.cfg.Log.Info("port exposed", "port", port, "address", e.info.Address)
	return e.info, nil
}

// Unexpose stops listening for port and closes its connections.
func (s *Supervisor) Unexpose(port int) (tool.PortInfo, error) {
	s.ports.mu.Lock()
	e, ok := s.ports.byPort[port]
	delete(s.ports.byPort, port)
	s.ports.mu.Unlock()
	if !ok {
		return tool.PortInfo{}, fmt.Errorf("port %d is not exposed", port)
	}
	e.close()
	return e.info, nil
}

// Ports lists the exposed ports by sandbox port.
func (s *Supervisor) Ports() []tool.PortInfo {
	s.ports.mu.Lock()
	defer s.ports.mu.Unlock()
	out := make([]tool.PortInfo, 0, len(s.ports.byPort))
	for _, e := range s.ports.byPort {
		out = append(out, e.info)
	}
	slices.SortFunc(out, func(a, b tool.PortInfo) int { return a.Port - b.Port })
	return out
}

// closePorts stops listening for every port.
func (s *Supervisor) closePorts() {
	s.ports.mu.Lock()
	s.ports.closed = true
	all := s.ports.byPort
	s.ports.byPort = nil
	s.ports.mu.Unlock()
	for _, e := range all {
		e.close()
	}
}

func (e *exposed) close() {
	e.l.Close()
	e.mu.Lock()
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

// serveExposed accepts e's connections until e is closed.
func (s *Supervisor) serveExposed(e *exposed) {
	for {
		c, err := e.l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			if !e.track(c, true) {
				return
			}
			defer e.track(c, false)
			st, err := s.dialExposed(e.info.Port)
			if err != nil {
				s.cfg.Log.Debug("exposed port: no connection", "port", e.info.Port, "error", err)
				return
			}
			defer st.Close()
			splice.Conns(c, st)
		}()
	}
}

// dialExposed connects to port of the sandbox's loopback: through the
// current boxsh-init's forwarding socket or, for a boxsh-init that has
// none (macOS, whose sandbox shares the host's network), directly.
func (s *Supervisor) dialExposed(port int) (net.Conn, error) {
	in, err := s.instance(context.Background())
	if err != nil {
		return nil, err
	}
	if in.fwd == nil {
		return net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	st, err := in.fwd.Open()
	if err != nil {
		return nil, err
	}
	if _, err := st.Write(frame.ForwardHeader(uint16(port))); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// frontTool runs the tools the front itself serves (expose, unexpose,
// ports), and tells whether name is one.
func (s *Supervisor) frontTool(name string, args json.RawMessage, done func(json.RawMessage, error)) bool {
	var r tool.Result
	switch name {
	case tool.Expose:
		var a tool.ExposeArgs
		if err := json.Unmarshal(args, &a); err != nil {
			done(nil, &frame.Error{Code: frame.CodeInvalidParams, Message: "expose tool: invalid arguments: " + err.Error()})
			return true
		}
		info, err := s.Expose(a.Port, a.HostPort)
		r = result(name, info, err)
	case tool.Unexpose:
		var a tool.UnexposeArgs
		if err := json.Unmarshal(args, &a); err != nil {
			done(nil, &frame.Error{Code: frame.CodeInvalidParams, Message: "unexpose tool: invalid arguments: " + err.Error()})
			return true
		}
		info, err := s.Unexpose(a.Port)
		r = result(name, info, err)
	case tool.Ports:
		r = tool.StructuredResult(tool.PortsOutput{Ports: s.Ports()})
	default:
		return false
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
