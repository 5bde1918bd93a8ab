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

func init() {
	defs = append(defs,
		def{name: Expose, description: "Make a TCP port of the sandbox reachable from the host at 127.0.0.1:host_port (a free port if none is given): each connection to it is connected to 127.0.0.1:port inside the sandbox. Inbound only; it gives the sandbox no way out. Any local process of the host can connect to it while it is exposed. A server of many sandboxes bounds the ports each exposes at once (--sandbox-forwards, default 32): past it expose is refused, naming the limit; unexpose one first.",
			in: ExposeArgs{}, out: PortInfo{}, ann: Annotations{"Expose Port", false, false}, beyondV3: true},
		def{name: Unexpose, description: "Stop exposing a port of the sandbox: the host stops listening; open connections are closed.",
			in: UnexposeArgs{}, out: PortInfo{}, ann: Annotations{"Unexpose Port", false, false}, beyondV3: true},
		def{name: Ports, description: "List the exposed ports: the sandbox's port and the host address that reaches it.",
			in: NoArgs{}, out: PortsOutput{}, ann: Annotations{"List Exposed Ports", true, false}, beyondV3: true},
	)
}
