//go:build !linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/boxsh/boxsh/internal/initproto"
)

// harden does nothing here.
func harden() {}

// runExec runs argv and returns its exit status.
func runExec(args []string) int {
	o, err := initproto.ParseInitOptions(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: %v\n", err)
		return 2
	}
	argv := o.Command
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
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
