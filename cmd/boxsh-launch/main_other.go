//go:build !linux || !cgo

// Command boxsh-launch starts a sandbox for the boxsh front on Linux; built
// without cgo, or elsewhere, it only says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "boxsh-launch: sandboxes are started by libcontainer on Linux, with cgo")
	os.Exit(2)
}
