//go:build !linux && !darwin

package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
)

// runSandboxedShell runs the shell (or the command after --) in the
// sandbox.
func runSandboxedShell(opts options, log hclog.Logger) int {
	fmt.Fprintln(os.Stderr, "boxsh: --sandbox is not supported on this system yet")
	return 1
}
