package tool

// The tools of port forwarding, beyond v3: the front runs them (it
// listens on the host), not boxsh-init.
const (
	Expose   = "expose"
	Unexpose = "unexpose"
	Ports    = "ports"
)

// ExposeArgs are the arguments of expose.
type ExposeArgs struct {
	Port     int `json:"port" minimum:"1" doc:"TCP port of the sandbox (on its loopback, 127.0.0.1) to make reachable from the host, 1-65535"`
	HostPort int `json:"host_port,omitempty" minimum:"0" doc:"Port of the host's 127.0.0.1 to listen on (default 0: a free one)"`
}

// UnexposeArgs are the arguments of unexpose.
type UnexposeArgs struct {
	Port int `json:"port" minimum:"1" doc:"The sandbox's port, as given to expose"`
}

// PortInfo describes an exposed port.
type PortInfo struct {
	Port     int    `json:"port" doc:"TCP port of the sandbox"`
	HostPort int    `json:"host_port" doc:"Port the host listens on, on 127.0.0.1"`
	Address  string `json:"address" doc:"Where the host reaches it: 127.0.0.1:HOST_PORT"`
}

// PortsOutput is the structured result of ports.
type PortsOutput struct {
	Ports []PortInfo `json:"ports" nullable:"false" doc:"Exposed ports, by sandbox port"`
}

// The definitions of the tools of port forwarding.
var (
	ExposeDef = Define[ExposeArgs, PortInfo](Info{Name: Expose, Order: 120, BeyondV3: true, Side: Front,
		Description: "Make a TCP port of the sandbox reachable from the host at 127.0.0.1:host_port (a free port if none is given): each connection to it is connected to 127.0.0.1:port inside the sandbox. Inbound only; it gives the sandbox no way out. Any local process of the host can connect to it while it is exposed. A server of many sandboxes bounds the ports each exposes at once (--sandbox-forwards, default 32): past it expose is refused, naming the limit; unexpose one first.",
		Annotations: Annotations{"Expose Port", false, false}})
	UnexposeDef = Define[UnexposeArgs, PortInfo](Info{Name: Unexpose, Order: 130, BeyondV3: true, Side: Front,
		Description: "Stop exposing a port of the sandbox: the host stops listening; open connections are closed.",
		Annotations: Annotations{"Unexpose Port", false, false}})
	PortsDef = Define[NoArgs, PortsOutput](Info{Name: Ports, Order: 140, BeyondV3: true, Side: Front,
		Description: "List the exposed ports: the sandbox's port and the host address that reaches it.",
		Annotations: Annotations{"List Exposed Ports", true, false}})
)
