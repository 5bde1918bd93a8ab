package client

import (
	"context"

	"github.com/boxsh/boxsh/internal/tool"
)

// AuditEntry is one entry of the audit log, an alias of tool.AuditEntry.
//
// An entry records a tool call, a run of shell mode, or a network decision of
// the proxy.
type AuditEntry = tool.AuditEntry

// AuditOutput is what Audit answers, an alias of tool.AuditOutput.
//
// It holds the log's path on the host, the entries oldest first, and how many
// lines read were not entries.
type AuditOutput = tool.AuditOutput

// Audit returns the last entries of the server's audit log (0: the
// default, 50; at most 1000). A server without one (start it with
// Options.Args --audit FILE) answers a *ToolError.
func (c *Client) Audit(ctx context.Context, last int) (*AuditOutput, error) {
	var out AuditOutput
	err := c.typed(ctx, tool.Audit, tool.AuditArgs{Last: last}, &out)
	return &out, err
}
