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

// bounds are the fleet's bounds that opts set.
func bounds(opts options) fleet.Bounds {
	mode, _ := opts.policy.Network()
	return fleet.Bounds{Max: opts.maxSandboxes, Warm: opts.warmSandboxes, Requests: opts.sandboxRequests, Forwards: opts.sandboxForwards, Egress: mode == policy.NetworkAllowlist}
}

// checkDescriptors warns when the process's descriptor limit is below what
// the fleet's sandboxes may use at their bounds.
func checkDescriptors(opts options) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if msg := bounds(opts).DescriptorWarning(lim.Cur); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
	}
}

// serveMany serves many sandboxes on web until ctx ends (--sandboxes).
func serveMany(ctx context.Context, opts options, log hclog.Logger, initPath string, web *httpListener, tools *tool.Registry) error {
	if err := runtime.SandboxSupported(); err != nil {
		return err
	}
	if err := fleet.CheckNetwork(opts.policy); err != nil {
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
	// The sandboxes and their endpoints outlive ctx (the stop signal) for
	// the shutdown grace of ServeStreamable: the calls in flight end first,
	// then the sandboxes stop and named ones keep their files.
	stop := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(stop))
	defer cancel()
	web.opts.ServerID = serverID(opts)
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
	if rcfg.LauncherPath, err = host.FindLauncher(initPath); err != nil {
		return err
	}
	rcfg.MaxForwards = cmp.Or(opts.sandboxForwards, fleet.DefaultForwards)
	web.opts.SandboxRequests = cmp.Or(opts.sandboxRequests, rpc.DefaultSandboxRequests)
	web.opts.MaxConns = bounds(opts).HTTPConns()
	var router *rpc.SandboxRouter
	// Until the fleet is up (the sandboxes of an earlier server hosted
	// again), the listener answers that the server is starting.
	starting := rpc.ServeStarting(web.ln, web.opts, "hosting the sandboxes of an earlier server again")
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
	starting()
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
	web.opts.Ready = mgr.Ready
	context.AfterFunc(stop, router.Drain)
	defer web.close()
	proc.OneProc()
	fmt.Fprintf(os.Stderr, "boxsh: MCP on %s/mcp (a sandbox per session); sandboxes at %[1]s/v1/sandboxes, each at /s/NAME/mcp\n", rpc.BaseURL(web.ln.Addr()))
	log.Info("serving many sandboxes over streamable HTTP", "addr", web.ln.Addr().String(), "max", opts.maxSandboxes, "idle", idleTTL, "server", web.opts.ServerID)
	return srv.ServeStreamable(stop, web.ln, web.opts)
}

// serverID is the server's name in its answers: --server-id, else
// $POD_NAME (a pod's, from the downward API), else the host name.
func serverID(opts options) string {
	if opts.serverID != "" {
		return opts.serverID
	}
	if id := os.Getenv("POD_NAME"); id != "" {
		return id
	}
	id, _ := os.Hostname()
	return id
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
