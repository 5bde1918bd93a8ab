//go:build linux && cgo

// Command boxsh-launch starts a sandbox for the boxsh front and stays its
// parent (see internal/launch).
//
// The front starts it with its end of a socket pair on fd 3. libcontainer
// runs it again as the container's init ("boxsh-launch init", from its sealed
// copy), which sets the sandbox up and executes boxsh-init.
package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/boxsh/boxsh/internal/launch"
	// The container's init, before anything else is initialized (see
	// lcinit).
	_ "github.com/boxsh/boxsh/internal/lcinit"
)

// version is set at build time with -ldflags "-X main.version=...", as the
// front's is; the two must be the same.
var version = "0.1.0-dev"

// init keeps the main goroutine on the main thread, whose parent-death
// signal launch.Serve clears when the front detaches (a thread's own is not
// the one the kernel sends).
func init() { runtime.LockOSThread() }

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("boxsh-launch", version)
		return
	}
	if len(os.Args) != 1 {
		fmt.Fprintln(os.Stderr, "boxsh-launch: the boxsh front starts this program to start a sandbox; it takes no arguments")
		os.Exit(2)
	}
	launch.RunSealed()
	f := os.NewFile(launch.ConnFD, "launch")
	if err := launch.Serve(f, version, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "boxsh-launch:", err)
		os.Exit(1)
	}
}
