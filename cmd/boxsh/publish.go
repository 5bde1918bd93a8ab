package main

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
)

// publish is one --publish [HOST_PORT:]PORT.
type publish struct {
	port, hostPort int
}

// parsePublish parses the value of --publish.
func parsePublish(v string) (publish, error) {
	bad := fmt.Errorf("%w: --publish %q: expected [HOST_PORT:]PORT, ports from 1 to 65535 (HOST_PORT 0: a free one)", policy.ErrUsage, v)
	hostStr, portStr, ok := strings.Cut(v, ":")
	if !ok {
		hostStr, portStr = "0", v
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return publish{}, bad
	}
	hostPort, err := strconv.Atoi(hostStr)
	if err != nil || hostPort < 0 || hostPort > 65535 {
		return publish{}, bad
	}
	return publish{port: port, hostPort: hostPort}, nil
}

// publishAll exposes each --publish port with expose and says on w, one
// line each, where it is. shared tells that the sandbox has no network
// namespace of its own (--network allow_all, plain mode, macOS): its
// ports are then the host's own already, which the line says.
func publishAll(pubs []publish, expose func(port, hostPort int) (tool.PortInfo, error), shared bool, w io.Writer) error {
	for _, p := range pubs {
		info, err := expose(p.port, p.hostPort)
		if err != nil {
			return fmt.Errorf("--publish %d: %w", p.port, err)
		}
		note := ""
		if shared {
			note = fmt.Sprintf(" (the sandbox shares the host's network: its port %d is the host's own 127.0.0.1:%[1]d too)", info.Port)
		}
		fmt.Fprintf(w, "boxsh: port %d of the sandbox published at %s%s\n", info.Port, info.Address, note)
	}
	return nil
}

// sharesHostNetwork tells whether commands use the host's network (no
// namespace of their own) under opts: without a sandbox, with --network
// allow_all, and on macOS (whose sandbox has no network namespace).
func sharesHostNetwork(opts options) bool {
	_, own := opts.policy.Network()
	return !own || !(opts.sandbox.Enabled || opts.sandbox.Try) || runtime.GOOS == "darwin"
}

// errPublishUnsandboxed refuses --publish in shell mode without a sandbox,
// whose shell replaces boxsh and whose ports are the host's own.
var errPublishUnsandboxed = fmt.Errorf("%w: --publish in shell mode and with -- COMMAND needs a sandbox (--sandbox, --network disabled, --try...): without one the command's ports are the host's own already", policy.ErrUsage)
