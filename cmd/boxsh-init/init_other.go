//go:build !linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// harden does nothing here.
func harden() {}

// runExec runs argv and returns its exit status.
func runExec(argv []string) int {
	if len(argv) > 1 && argv[0] == "--lifeline" {
		argv = argv[2:]
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "boxsh-init: --exec needs a command")
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "boxsh: %s: %v\n", argv[0], err)
	return 127
}
