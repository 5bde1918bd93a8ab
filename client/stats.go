package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/boxsh/boxsh/internal/tool"
)

// Stats is what the sandbox uses, an alias of tool.StatsOutput.
//
//   - Source says where the processor, memory and process figures come from:
//     "cgroup", "proc" or "none".
//   - DiskBytes is the space taken by the changes of the sandbox's
//     copy-on-write binds (DiskDirs, on the host).
//   - ProxyBytesOut and ProxyBytesIn count the bytes through its network
//     proxy.
//   - UptimeSeconds is how long its boxsh-init has run.
type Stats = tool.StatsOutput

// Stats measures the sandbox (the sandbox_stats tool).
func (c *Client) Stats(ctx context.Context) (*Stats, error) {
	var out Stats
	err := c.typed(ctx, tool.SandboxStats, struct{}{}, &out)
	return &out, err
}

// Stats measures sandbox name, as its sandbox_stats tool does, through
// the management API (GET /v1/sandboxes/NAME/stats, the server's token).
func (s *Server) Stats(ctx context.Context, name string) (*Stats, error) {
	var out Stats
	if err := s.do(ctx, http.MethodGet, "/v1/sandboxes/"+url.PathEscape(name)+"/stats", s.token, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
