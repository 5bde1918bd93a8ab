package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/policy"
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

// asksClient tells whether the stdio client is asked about hosts on no
// list: by --network-ask, or by the policy's network.ask where it can
// apply (--rpc on stdio, the allowlist mode).
func asksClient(opts options, log hclog.Logger) bool {
	if opts.networkAsk {
		return true
	}
	ask := opts.policy.NetworkAsk
	if !ask.Value {
		return false
	}
	mode, _ := opts.policy.Network()
	switch {
	case opts.listen != "" || opts.sandboxes:
		log.Warn("network.ask applies to --rpc on stdio only: requests to hosts on no list are refused", "source", ask.Source)
	case !opts.sandbox.Enabled && !opts.sandbox.Try:
		log.Warn("network.ask needs a sandbox (--sandbox): without one, nothing is asked", "source", ask.Source)
	case mode != policy.NetworkAllowlist:
		log.Warn("network.ask applies to the allowlist network mode only", "source", ask.Source, "mode", mode)
	default:
		return true
	}
	return false
}
