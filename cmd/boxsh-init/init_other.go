//go:build !linux

package main

// runAsInit is only needed where boxsh-init can be PID 1 of a sandbox.
func runAsInit() (int, bool) { return 0, false }
