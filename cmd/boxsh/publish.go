package main

import (
	"fmt"
	"strconv"
	"strings"

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
