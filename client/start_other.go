//go:build !linux

package client

import "os/exec"

// startCmd starts the server. Only Linux has a parent-death signal: here
// the server ends when its input does (the owner's death closes it),
// once the calls in flight are done.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
