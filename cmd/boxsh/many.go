package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/front/audit"
	"github.com/boxsh/boxsh/internal/front/fleet"
	"github.com/boxsh/boxsh/internal/idle"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/rpc"
	"github.com/boxsh/boxsh/runtime"
	"github.com/boxsh/boxsh/runtime/host"
)

// defaultSandboxIdle is --sandbox-idle's default.
const defaultSandboxIdle = 30 * time.Minute

// defaultSandboxForwards is --sandbox-forwards' default.
const defaultSandboxForwards = 32

// ownDescriptors bounds the descriptors the server holds for one sandbox
// besides its requests and forwards (boxsh-init's sockets and pipes, its
// session), and serverDescriptors those of the server itself (its
// listener, logs, the /mcp and management requests, the reaper).
const ownDescriptors, serverDescriptors = 16, 512

// httpConns bounds the server's HTTP connections (rpc.HTTPOptions.MaxConns):
// each sandbox's requests in flight, those of /mcp (128) and of the
// management API (64), and room for idle kept-alive ones; it is within
// descriptorsNeeded.
func httpConns(n, warm, requests int) int { return fleet.MaxRunning(n, warm)*requests + 128 + 64 + 192 }

// descriptorsNeeded is how many descriptors the server may hold with
// every sandbox it may host at its bounds: n sandboxes (and warm ones),
// each with its requests in flight, its exposed ports and the
// connections to them.
func descriptorsNeeded(n, warm, requests, forwards int) int {
	per := requests + forwards + runtime.ForwardConns + ownDescriptors
	return fleet.MaxRunning(n, warm)*per + serverDescriptors
}

// checkDescriptors warns when the server's descriptor limit is below what
// its sandboxes may use at their bounds: then the sandboxes together, not
// any one of them, could run it out.
func checkDescriptors(opts options) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if msg := descriptorWarning(lim.Cur, opts); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
	}
}

// descriptorWarning is checkDescriptors' warning for a limit of limit
// descriptors, or "" when it is enough.
func descriptorWarning(limit uint64, opts options) string {
	n := cmp.Or(opts.maxSandboxes, fleet.DefaultMax)
	need := descriptorsNeeded(n, opts.warmSandboxes, cmp.Or(opts.sandboxRequests, rpc.DefaultSandboxRequests), cmp.Or(opts.sandboxForwards, defaultSandboxForwards))
	if uint64(need) <= limit {
		return ""
	}
	return fmt.Sprintf("boxsh: warning: %d sandboxes at their bounds may use %d file descriptors, above this process's limit of %d: raise ulimit -n or lower --max-sandboxes, --sandbox-requests or --sandbox-forwards", n, need, limit)
}

// manyNetwork is the network namespace of every sandbox of --sandboxes:
// one of its own, so that no sandbox reaches another's ports. An open
// network (allow_all) would be the host's, shared: it is refused when the
// policy names it, and none is the default.
func manyNetwork(p policy.Policy) error {
	if mode, own := p.Network(); !own && p.NetworkMode.Value != "" {
		return fmt.Errorf("%w: --sandboxes gives every sandbox a network namespace of its own: network %s (from %s) would share the host's between them; use --network disabled or allowlist", policy.ErrUsage, mode, p.NetworkMode.Source)
	}
	return nil
}

// serveMany serves many sandboxes on web until ctx ends (--sandboxes).
func serveMany(ctx context.Context, opts options, log hclog.Logger, initPath string, web *httpListener, tools *tool.Registry) error {
	if err := runtime.SandboxSupported(); err != nil {
		return err
	}
	if err := manyNetwork(opts.policy); err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	sb := opts.sandbox
	sb.NewNetNS = true
	idleTTL := opts.sandboxIdle
	if idleTTL == 0 {
		idleTTL = defaultSandboxIdle
	} else if idleTTL < 0 {
		idleTTL = 0
	}
	checkDescriptors(opts)
	trimmer := idle.NewTrimmer()
	auditLog, err := openManyAudit(opts, sb)
	if err != nil {
		return err
	}
	if auditLog != nil {
		defer auditLog.Close()
		log.Info("audit log", "path", auditLog.Path())
	}
	// Each sandbox starts in its view of the workspace (its session's).
	rcfg := runtimeConfig(opts, log, initPath, sb, "", os.Getenv("HOME"))
	rcfg.MaxForwards = cmp.Or(opts.sandboxForwards, defaultSandboxForwards)
	web.opts.SandboxRequests = cmp.Or(opts.sandboxRequests, rpc.DefaultSandboxRequests)
	web.opts.MaxConns = httpConns(cmp.Or(opts.maxSandboxes, fleet.DefaultMax), opts.warmSandboxes, web.opts.SandboxRequests)
	var router *rpc.SandboxRouter
	mgr, err := fleet.New(ctx, fleet.Config{
		Runtime:   rcfg,
		Workspace: cwd,
		Max:       opts.maxSandboxes,
		IdleTTL:   idleTTL,
		Warm:      opts.warmSandboxes,
		Disk:      opts.sandboxDisk,
		Protect:   host.ProtectEntries(opts.policy),
		Wrap: func(b rpc.Backend, name string, created time.Time) rpc.Backend {
			if auditLog != nil {
				b = &audit.Backend{Next: b, Log: auditLog, Client: rpc.ClientOf, Sandbox: name, Since: created, Errors: log}
			}
			return trimming{b, trimmer}
		},
		Decided: auditSandboxDecisions(auditLog, log),
		Deleted: func(name string) {
			router.Forget(name)
			auditManaged(auditLog, log)(rpc.SandboxCall{Action: "delete", Name: name, Client: "idle", Began: time.Now()})
		},
		Log: log,
	})
	if err != nil {
		return err
	}
	defer mgr.Close()
	srv := &rpc.Server{Tools: tools, Name: "boxsh", Version: version, Log: log}
	if router, err = rpc.NewSandboxRouter(ctx, srv, mgr, web.opts); err != nil {
		return err
	}
	srv.Backend = router.SessionBackend()
	router.Managed = auditManaged(auditLog, log)
	if web.opts.Extra, err = router.Management(); err != nil {
		return err
	}
	web.opts.Sandboxes = router
	web.opts.SessionEnded = router.EndSession
	defer web.close()
	proc.OneProc()
	fmt.Fprintf(os.Stderr, "boxsh: MCP on http://%s/mcp (a sandbox per session); sandboxes at http://%[1]s/v1/sandboxes, each at /s/NAME/mcp\n", web.ln.Addr())
	log.Info("serving many sandboxes over streamable HTTP", "addr", web.ln.Addr().String(), "max", opts.maxSandboxes, "idle", idleTTL)
	return srv.ServeStreamable(ctx, web.ln, web.opts)
}

// openManyAudit opens --audit's log for a server of many sandboxes (one
// log, each entry naming its sandbox), or returns nil. Besides what
// openAudit refuses, the log may not be among the sandboxes' sessions or
// empty directories, where their writable layers are (those of the
// default directories, which serveMany's fleet keeps).
func openManyAudit(opts options, sb policy.Sandbox) (*audit.Log, error) {
	if opts.audit == "" || opts.noAudit {
		return nil, nil
	}
	dirs, err := fleet.Config{}.WritableDirs()
	if err != nil {
		return nil, err
	}
	check := sb
	check.Binds = slices.Clip(sb.Binds)
	for _, d := range dirs {
		check.Binds = append(check.Binds, policy.Bind{Mode: policy.ReadWrite, Src: d})
	}
	return openAudit(opts, check)
}
