package client

import (
	"context"

	"github.com/boxsh/boxsh/internal/tool"
)

// PortInfo is an exposed port (an alias of tool.PortInfo):
//
//	Port     int    // the sandbox's port
//	HostPort int    // the host's port, on 127.0.0.1
//	Address  string // "127.0.0.1:HOST_PORT"
type PortInfo = tool.PortInfo

// Expose makes the sandbox's TCP port reachable at the host's
// 127.0.0.1:hostPort (0: a free port), and returns where.
func (c *Client) Expose(ctx context.Context, port, hostPort int) (*PortInfo, error) {
	var out PortInfo
	err := c.typed(ctx, tool.Expose, tool.ExposeArgs{Port: port, HostPort: hostPort}, &out)
	return &out, err
}

// Unexpose stops exposing the sandbox's port.
func (c *Client) Unexpose(ctx context.Context, port int) (*PortInfo, error) {
	var out PortInfo
	err := c.typed(ctx, tool.Unexpose, tool.UnexposeArgs{Port: port}, &out)
	return &out, err
}

// Ports lists the exposed ports.
func (c *Client) Ports(ctx context.Context) ([]PortInfo, error) {
	var out tool.PortsOutput
	err := c.typed(ctx, tool.Ports, struct{}{}, &out)
	return out.Ports, err
}
