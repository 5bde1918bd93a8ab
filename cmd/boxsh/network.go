package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/internal/front/audit"
	"github.com/boxsh/boxsh/internal/front/fleet"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/rpc"
	"github.com/boxsh/boxsh/runtime"
)

// The network lists of a server of one sandbox in allowlist mode change
// while it runs: through GET and PATCH /v1/network of --listen (its bearer
// token), and, on SIGHUP, to those of the policy files and flags read again
// (with the same trust and narrowing as at start). Each change is an entry
// of the audit log.

// liveNetwork tells whether opts serve one sandbox whose network lists may
// change while it runs: --rpc with a sandbox in allowlist mode, not
// --sandboxes. SIGHUP then reloads the lists rather than stopping boxsh.
func liveNetwork(opts options) bool {
	if opts.sandboxes || !opts.sandbox.Enabled && !opts.sandbox.Try {
		return false
	}
	mode, _ := opts.policy.Network()
	return mode == policy.NetworkAllowlist
}

// networkLists is the network lists of sup's sandbox, or nil when it has
// none.
func networkLists(sup *runtime.Supervisor) rpc.NetworkLists {
	if sup == nil || sup.Network() == nil {
		return nil
	}
	return fleet.Lists(sup.Network())
}

// networkHandler serves /v1/network of --listen for the sandbox of sup,
// started with cfg; the audit log records the changes.
func networkHandler(sup *runtime.Supervisor, cfg runtime.Config, l *audit.Log, log hclog.Logger) http.Handler {
	return rpc.NetworkHandler(networkLists(sup), runtime.NoNetworkWhy(cfg), func(client string, c apitype.NetworkChange, old, p apitype.NetworkPolicy, err error) {
		auditNetwork(l, log, client, rpc.NetworkAudit(c, old, p, err), time.Now(), err)
	})
}

// withNetworkPaths is rest with network serving /v1/network (rest alone
// when network is nil).
func withNetworkPaths(rest, network http.Handler) http.Handler {
	if network == nil {
		return rest
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/network", network)
	mux.Handle("/", rest)
	return mux
}

// auditNetwork records a change of the network lists asked by client.
func auditNetwork(l *audit.Log, log hclog.Logger, client string, args map[string]any, began time.Time, err error) {
	if l == nil {
		return
	}
	e := audit.Entry{Time: audit.Time(began), Kind: tool.AuditSandbox, Client: client, Tool: "network", Args: args,
		DurationMS: time.Since(began).Milliseconds()}
	if err != nil {
		e.Error = err.Error()
	}
	record(l, log, e)
}

// reloadOnHUP reloads the network lists (reloadNetwork) at each signal of
// hup until ctx ends. A failure keeps the lists in force and is told on
// stderr.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, opts options, lists rpc.NetworkLists, l *audit.Log, log hclog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		p, err := reloadNetwork(opts, lists, l, log)
		if err != nil {
			fmt.Fprintf(os.Stderr, "boxsh: SIGHUP: %v; the network lists in force stay\n", err)
			continue
		}
		fmt.Fprintf(os.Stderr, "boxsh: SIGHUP: network lists reloaded: allow %s; deny %s; %d open connections closed\n",
			strings.Join(patternsOf(p.Allow), ", "), strings.Join(patternsOf(p.Deny), ", "), p.Closed)
	}
}

// reloadNetwork reads the policy files and flags again, as boxsh did at
// start, and puts their network lists in force. A settings file the
// sandbox could have written can only narrow them, as at start. A policy
// that cannot be read, whose lists are not valid, or whose network mode is
// no longer allowlist changes nothing.
func reloadNetwork(opts options, lists rpc.NetworkLists, l *audit.Log, log hclog.Logger) (apitype.NetworkPolicy, error) {
	began := time.Now()
	cwd, err := os.Getwd()
	if err != nil {
		return apitype.NetworkPolicy{}, err
	}
	p, err := loadPolicy(opts, os.Getenv("HOME"), cwd)
	if err != nil {
		return apitype.NetworkPolicy{}, fmt.Errorf("reading the policy: %w", err)
	}
	if mode, _ := p.Network(); mode != policy.NetworkAllowlist {
		return apitype.NetworkPolicy{}, fmt.Errorf("the policy's network mode is now %s: a running sandbox stays in allowlist mode (restart boxsh to change it)", mode)
	}
	warnUntrusted(os.Stderr, p)
	old, next, err := lists.UpdateNetwork(func(cur apitype.NetworkPolicy) (apitype.NetworkPolicy, error) {
		return apitype.NetworkPolicy{Mode: cur.Mode, Allow: rulesOf(p.AllowedDomains), Deny: rulesOf(p.DeniedDomains)}, nil
	})
	auditNetwork(l, log, "SIGHUP", rpc.NetworkAudit(apitype.NetworkChange{}, old, next, err), began, err)
	return next, err
}

func rulesOf(rs []policy.Rule) []apitype.NetworkRule {
	out := make([]apitype.NetworkRule, len(rs))
	for i, r := range rs {
		out[i] = apitype.NetworkRule{Pattern: r.Value, Source: string(r.Source)}
	}
	return out
}

func patternsOf(rs []apitype.NetworkRule) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Pattern
	}
	return out
}
