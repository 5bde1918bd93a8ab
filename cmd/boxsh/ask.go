package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/rpc"
)

// askSchema is the requestedSchema of a question about a destination: one
// choice among the answers.
var askSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision": map[string]any{
			"type":        "string",
			"title":       "Decision",
			"description": "allow_once: this connection only; allow_sandbox: this host and port for the rest of the session; deny: refuse it",
			"enum":        []string{proxy.AllowOnce.String(), proxy.AllowSandbox.String(), proxy.Deny.String()},
		},
	},
	"required": []string{"decision"},
}

// askClient is the proxy's question about a destination on no list
// (--network-ask): it asks the stdio client through e.
//
// The answer is:
//   - the decision chosen, when the client accepts;
//   - Deny, when it declines or cancels;
//   - NoAnswer when it cannot be asked (no elicitation capability), fails,
//     or does not answer before ctx ends.
func askClient(e *rpc.Elicitor, log hclog.Logger) func(ctx context.Context, host string, port int) proxy.Answer {
	return func(ctx context.Context, host string, port int) proxy.Answer {
		dest := net.JoinHostPort(host, strconv.Itoa(port))
		res, err := e.Elicit(ctx, fmt.Sprintf("The sandbox wants to connect to %s. Allow?", dest), askSchema)
		switch {
		case errors.Is(err, rpc.ErrNoElicitation):
			return proxy.NoAnswer
		case err != nil:
			log.Warn("no answer to the question about a destination", "host", host, "port", port, "error", err)
			return proxy.NoAnswer
		case res.Action != "accept":
			return proxy.Deny
		}
		switch res.Content["decision"] {
		case proxy.AllowOnce.String():
			return proxy.AllowOnce
		case proxy.AllowSandbox.String():
			return proxy.AllowSandbox
		}
		return proxy.Deny
	}
}
