// Command boxsh is a sandboxed POSIX shell and MCP server.
//
// In --rpc mode it is the front: it speaks MCP on stdio and forwards every
// tool call to boxsh-init, which runs the tools. With --sandbox,
// boxsh-init runs inside the sandbox.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/internal/front/audit"
	"github.com/boxsh/boxsh/internal/idle"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/starttrace"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/internal/toolhost/readhead"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/rpc"
	"github.com/boxsh/boxsh/runtime"
	"github.com/boxsh/boxsh/runtime/host"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	starttrace.Mark("front.main")
	// Goroutines blocked reading stdin and waiting for the sandbox.
	proc.ReserveProcs(2)
	code := run(os.Args[1:])
	starttrace.Mark("front.exit")
	os.Exit(code)
}

// run returns the exit status: 2 for usage errors, 1 for failures of the
// environment.
func run(argv []string) int {
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh: %v\n", err)
		return 1
	}
	if code, ok := runSubcommand(argv, cwd, os.Stdout, os.Stderr); ok {
		return code
	}
	opts, err := parseArgs(argv, cwd)
	if err == nil && opts.policyFile != "" && opts.impliedBy == "" {
		// A --policy file with rules only a sandbox enforces turns it on
		// (an unreadable one fails in loadPolicy).
		if s, rerr := policy.ReadSettings(opts.policyFile); rerr == nil && s.Restricts() {
			opts.impliedBy = "--policy"
			opts.sandbox.Enabled = true
		}
	}
	if err == nil {
		err = opts.sandbox.Validate()
	}
	if err == nil && wantsOneSandbox(opts) {
		// The launcher's copy is made while the policy is read and
		// the sandbox prepared.
		host.PrepareLauncher()
	}
	if err == nil && opts.mode != modeHelp && opts.mode != modeVersion {
		opts.policy, err = loadPolicy(opts, os.Getenv("HOME"), cwd)
		// Without a sandbox, only --rpc applies a policy (the environment).
		if err == nil && (opts.mode == modeRPC || opts.sandbox.Enabled || opts.sandbox.Try) {
			warnUntrusted(os.Stderr, opts.policy)
			warnWithheld(os.Stderr, opts.policy, os.Environ())
		}
		if err == nil && (opts.sandbox.Enabled || opts.sandbox.Try) {
			opts.sandbox, err = host.ResolveSandbox(opts.sandbox, opts.policy, os.Getenv("HOME"), cwd)
		}
	}
	if err != nil {
		return fail(err)
	}
	log := newLogger(opts.logLevel)
	switch opts.mode {
	case modeHelp:
		fmt.Fprintf(os.Stdout, "boxsh version %s\n\n%s", version, usage())
		return 0
	case modeVersion:
		fmt.Fprintf(os.Stdout, "boxsh version %s\n", version)
		return 0
	case modeRPC:
		return serveRPC(opts, log)
	case modeCommand:
		return runCommand(opts, log)
	}
	return runShell(opts, log)
}

// wantsOneSandbox reports whether opts start one sandbox: the shell or a
// command in a sandbox (runSandboxedShell), or a server of one sandbox.
func wantsOneSandbox(opts options) bool {
	switch opts.mode {
	case modeShell:
		return opts.sandbox.Enabled || opts.sandbox.Try
	case modeCommand:
		return opts.sandbox.Enabled
	case modeRPC:
		return !opts.sandboxes && (opts.sandbox.Enabled || opts.sandbox.Try)
	}
	return false
}

// fail prints err as boxsh's one-line error and returns the exit status:
// 2 for usage errors (which point to --help), 1 for the rest.
func fail(err error) int {
	if errors.Is(err, policy.ErrUsage) {
		fmt.Fprintf(os.Stderr, "boxsh: %s (see boxsh --help)\n", strings.TrimPrefix(err.Error(), "usage: "))
		return 2
	}
	fmt.Fprintf(os.Stderr, "boxsh: %v\n", err)
	return 1
}

// newLogger returns the stderr logger at the level of --log-level or
// BOXSH_LOG_LEVEL (default warn).
func newLogger(level string) hclog.Logger {
	if level == "" {
		level = os.Getenv("BOXSH_LOG_LEVEL")
	}
	lvl := hclog.LevelFromString(level)
	if lvl == hclog.NoLevel {
		lvl = hclog.Warn
	}
	return hclog.New(&hclog.LoggerOptions{Name: "boxsh", Level: lvl, Output: os.Stderr})
}

// serveRPC runs the MCP server until stdin ends or a signal arrives.
func serveRPC(opts options, log hclog.Logger) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stopSignal syscall.Signal
	stop := func(sig os.Signal) {
		stopSignal = sig.(syscall.Signal)
		log.Info("stopping", "signal", sig)
		cancel()
	}
	// SIGHUP reloads the network lists of a sandbox that has them.
	var hup chan os.Signal
	var signalsSet <-chan struct{}
	if liveNetwork(opts) {
		hup = make(chan os.Signal, 1)
		signalsSet = proc.HandleStopSignalsButHUP(stop, hup)
	} else {
		signalsSet = proc.HandleStopSignals(stop)
	}

	// The tool registry is made, and its schemas derived, while the
	// sandbox starts.
	type registryResult struct {
		tools *tool.Registry
		err   error
	}
	registry := make(chan registryResult, 1)
	go func() {
		tools, err := tool.NewRegistry()
		if err == nil {
			tools.Derive()
		}
		registry <- registryResult{tools, err}
	}()
	initPath, err := runtime.FindInit()
	if err != nil {
		return fail(err)
	}
	// A sandbox's launcher, found now rather than at the sandbox's start.
	var launcherPath string
	if opts.sandbox.Enabled || opts.sandboxes {
		if launcherPath, err = host.FindLauncher(initPath); err != nil {
			return fail(err)
		}
		if opts.sandboxes {
			// A server of many sandboxes: their launchers run from one
			// copy, which it holds. A server of one runs its launcher from
			// the copy PrepareLauncher made and holds none (a restart's
			// launcher copies itself).
			host.ShareLauncherCopies(launcherPath)
		}
	}
	var web *httpListener
	if opts.listen != "" {
		if web, err = listenHTTP(opts); err != nil {
			return fail(err)
		}
		defer web.close()
	}
	if opts.sandboxes {
		<-signalsSet
		reg := <-registry
		if reg.err != nil {
			return fail(reg.err)
		}
		err := serveMany(ctx, opts, log, initPath, web, reg.tools)
		if err != nil && !errors.Is(err, context.Canceled) {
			return fail(err)
		}
		if stopSignal != 0 {
			return proc.SignalStatus(stopSignal)
		}
		return 0
	}
	sb, cwd, home, run, err := prepareSandboxHere(opts.sandbox)
	if err != nil {
		return fail(err)
	}
	defer run.Done()
	auditLog, err := openAudit(opts, sb)
	if err != nil {
		return fail(err)
	}
	if auditLog != nil {
		defer auditLog.Close()
		log.Info("audit log", "path", auditLog.Path())
	}
	cfg := runtimeConfig(opts, log, initPath, sb, cwd, home)
	cfg.LauncherPath = launcherPath
	// The server exits once its sandbox is stopped, which its launcher
	// then finishes destroying; --try's review follows the destroy.
	cfg.DetachDestroy = !opts.sandbox.Try
	cfg.Proxy = host.ProxyHooks{Decided: auditDecisions(auditLog, log)}
	var elicitor *rpc.Elicitor
	if asksClient(opts, log) {
		elicitor = &rpc.Elicitor{}
		cfg.Proxy.Ask = askClient(elicitor, log)
	}
	sup, err := runtime.NewSupervisor(ctx, cfg)
	var backend rpc.Backend
	switch {
	case err == nil:
		run.Started()
		backend = sup
		if hup != nil && sup.Network() != nil {
			go reloadOnHUP(ctx, hup, opts, networkLists(sup), auditLog, log)
		}
		if err := publishAll(opts.publish, sup.Expose, sharesHostNetwork(opts), os.Stderr); err != nil {
			_ = sup.Close(5 * time.Second)
			return fail(err)
		}
	case (sb.Enabled || sb.Try) && !errors.Is(err, policy.ErrBind):
		// The client learns why at its first call, rather than from a
		// server that exits before answering initialize.
		fmt.Fprintf(os.Stderr, "boxsh: %v\n", err)
		why, _, _ := strings.Cut(err.Error(), "\n")
		backend = unstartedBackend{errors.New(why)}
	default:
		return fail(err)
	}
	starttrace.Mark("front.supervisor")
	if web != nil {
		web.network = networkHandler(sup, cfg, auditLog, log)
	}
	<-signalsSet
	reg := <-registry
	if reg.err != nil {
		if sup != nil {
			_ = sup.Close(5 * time.Second)
		}
		return fail(reg.err)
	}
	tools := reg.tools
	backend = &audit.Backend{Next: backend, Log: auditLog, Client: rpc.ClientOf, Errors: log}
	srv := &rpc.Server{Tools: tools, Backend: trimming{backend, idle.NewTrimmer()}, Name: "boxsh", Version: version, Log: log, Elicitor: elicitor}
	for name, how := range runtime.Enforcement(opts.policy, opts.sandbox.Enabled || opts.sandbox.Try) {
		log.Info("limit", "name", name, "how", how)
	}
	// A restart that cannot enforce the file rules ends the session.
	if sup != nil {
		go func() {
			select {
			case <-sup.Failed():
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	var serveErr error
	if web != nil {
		serveErr = web.serve(ctx, srv, log)
	} else {
		log.Info("serving MCP on stdio", "workers", opts.workers, "shell", opts.shell, "sandbox", opts.sandbox.Enabled)
		// A stdin waited for in the poller holds no P: the front then
		// serves on one P, as it does HTTP (see proc.OneProc).
		in, pollable := proc.PollableInput(os.Stdin)
		if pollable {
			proc.OneProc()
		}
		serveErr = srv.Serve(ctx, in, proc.NoWaitOutput(os.Stdout))
	}
	if sup != nil {
		if err := sup.Close(5 * time.Second); err != nil {
			log.Debug("boxsh-init exit", "error", err)
		}
		if err := sup.Err(); err != nil {
			return fail(err)
		}
	}
	if errors.Is(serveErr, context.Canceled) && stopSignal != 0 {
		return proc.SignalStatus(stopSignal)
	}
	if serveErr != nil {
		log.Error("serve", "error", serveErr)
		return 1
	}
	return 0
}

// runtimeConfig is the boxsh-init of --rpc for the sandbox sb, started in
// cwd for a user whose home is home.
func runtimeConfig(opts options, log hclog.Logger, initPath string, sb policy.Sandbox, cwd, home string) runtime.Config {
	return runtime.Config{
		InitPath: initPath,
		Workers:  opts.workers,
		Shell:    opts.shell,
		LogLevel: log.GetLevel().String(),
		Sandbox:  sb,
		Policy:   opts.policy,
		Env:      policy.CommandEnv(opts.policy, os.Environ()),
		Cwd:      cwd,
		Home:     home,
		Version:  version,
		Log:      log,
		// Small reads of a sandbox are answered by the front, with
		// boxsh-init's result.
		ReadQuick: readhead.Quick,
	}
}

// unstartedBackend fails every tool call with why the sandbox could not
// start.
type unstartedBackend struct{ err error }

func (b unstartedBackend) Start(_ context.Context, _ string, _ json.RawMessage, done func(json.RawMessage, error)) error {
	go done(nil, b.err)
	return nil
}
