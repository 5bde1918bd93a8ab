package main

import (
	"fmt"
	"os"

	"github.com/boxsh/boxsh/internal/seccompload"
)

// loadSeccomp loads the sandbox's seccomp filter when the front passed its
// program (see seccompload). It runs before anything else: nothing of the
// sandbox's runs before the filter is in place. A program that cannot be
// loaded ends boxsh-init, and with it the sandbox: it never runs
// unfiltered.
func loadSeccomp() {
	if err := seccompload.LoadFromEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "boxsh-init: %v\n", err)
		os.Exit(1)
	}
}
