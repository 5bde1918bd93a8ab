// Command execfloor executes sh -c COMMAND and does nothing else: the floor
// of a plain start (boxsh -c COMMAND) for a front written in Go, for the
// bench's start comparison (-start with -floor).
//
//	execfloor -c COMMAND
package main

import (
	"fmt"
	"os"
	"syscall"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "-c" {
		fmt.Fprintln(os.Stderr, "usage: execfloor -c COMMAND")
		os.Exit(2)
	}
	err := syscall.Exec("/bin/sh", []string{"sh", "-c", os.Args[2]}, os.Environ())
	fmt.Fprintln(os.Stderr, "execfloor: /bin/sh:", err)
	os.Exit(127)
}
