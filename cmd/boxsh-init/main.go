// Command boxsh-init runs the boxsh tools. The boxsh front starts it (inside
// the sandbox when there is one) with a socket on fd 3 that carries calls and
// replies as length-prefixed JSON frames. It hosts the worker pool for bash
// calls, the file tools and the terminal sessions.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/agent"
	"github.com/boxsh/boxsh/agent/reap"
	"github.com/boxsh/boxsh/internal/proc"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == proc.LimitsFlag {
		os.Exit(runLimited(os.Args[2:]))
	}
	harden()
	// Goroutines blocked in waits: the reaper's, the command's (--exec).
	proc.ReserveProcs(2)
	if len(os.Args) > 1 && os.Args[1] == "--exec" {
		os.Exit(runExec(os.Args[2:]))
	}
	os.Exit(run())
}

// execArgs parses the arguments of boxsh-init --exec: [--lifeline FD]
// [--] CMD ARGS... It returns the lifeline descriptor (0 for none).
func execArgs(argv []string) (lifeline int, cmd []string, err error) {
	if len(argv) > 1 && argv[0] == "--lifeline" {
		if lifeline, err = strconv.Atoi(argv[1]); err != nil || lifeline < 3 {
			return 0, nil, fmt.Errorf("--lifeline %q: expected a descriptor number", argv[1])
		}
		argv = argv[2:]
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return 0, nil, errors.New("--exec needs a command")
	}
	return lifeline, argv, nil
}

func run() int {
	fs := flag.NewFlagSet("boxsh-init", flag.ContinueOnError)
	workers := fs.Int("workers", 4, "bash commands that run at once")
	shell := fs.String("shell", "/bin/sh", "shell that runs commands")
	level := fs.String("log-level", "warn", "log level")
	fd := fs.Int("fd", 3, "descriptor of the frame socket")
	timeoutDefault := fs.Float64("timeout-default", 0, "bash timeout in seconds of calls that give none (0: none)")
	maxOutput := fs.Int64("max-output", 0, "cap on each output stream of a bash call, in bytes (0: 10 MiB)")
	memory := fs.Int64("memory", 0, "cap on the data of each command's processes, in bytes (0: none)")
	pids := fs.Int("pids", 0, "cap on the tasks of the sandbox's user, for commands (0: none)")
	rulesFile := fs.String("rules", "", "the policy's rules, for the file tools' messages (JSON)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	// And one for each running command's wait.
	proc.ReserveProcs(*workers)
	log := hclog.New(&hclog.LoggerOptions{Name: "boxsh-init", Level: hclog.LevelFromString(*level), Output: os.Stderr})

	f := os.NewFile(uintptr(*fd), "frames")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: fd %d is not the frame socket (boxsh-init is started by boxsh): %v\n", *fd, err)
		return 2
	}
	defer conn.Close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	// As PID 1 of a sandbox, boxsh-init inherits every orphan: it reaps
	// them, leaving the exit status of its own children to their Wait.
	var reaper *reap.Reaper
	if os.Getpid() == 1 {
		reaper = reap.New()
		go reaper.Run(ctx)
	}
	var rules []agent.PolicyRule
	if *rulesFile != "" {
		var err error
		if rules, err = agent.LoadPolicyRules(*rulesFile); err != nil {
			log.Warn("policy rules", "error", err)
		}
	}
	a, err := agent.New(agent.Config{Rules: rules, Shell: *shell, Workers: *workers, Log: log, Reaper: reaper, TimeoutDefault: *timeoutDefault, MaxOutput: int(*maxOutput),
		Limits: proc.Limits{Data: *memory, Procs: *pids}, LimitsExe: "/proc/self/exe"})
	if err != nil {
		log.Error("start", "error", err)
		return 1
	}
	defer a.Close()
	go func() {
		// Unblock Serve when a signal arrives.
		<-ctx.Done()
		conn.Close()
	}()
	if err := a.Serve(ctx, conn); err != nil && ctx.Err() == nil {
		log.Error("serve", "error", err)
		return 1
	}
	return 0
}

// runLimited is boxsh-init --limits SPEC -- COMMAND ARGS...: it sets the
// limits on itself and executes COMMAND, which inherits them (see
// proc.Limits.Wrap). It returns only on failure.
func runLimited(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "boxsh-init: usage: boxsh-init --limits SPEC -- COMMAND ARGS...")
		return 2
	}
	l, err := proc.ParseLimits(args[0])
	if err == nil {
		err = l.Apply()
	}
	argv := args[2:]
	path := argv[0]
	if err == nil {
		path, err = exec.LookPath(argv[0])
	}
	if err == nil {
		err = syscall.Exec(path, argv, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "boxsh-init: %s: %v\n", argv[0], err)
	return 126
}
