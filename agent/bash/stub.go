package bash

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"
)

// StubArg is the first argument that makes the boxsh-init binary act as an
// exec stub: a process started ahead of a call, in its own process group and
// with its stdio already wired, that waits for a command and then replaces
// itself with `<shell> -c COMMAND`. Starting the stub before the request
// arrives takes process creation off the latency of a call, while the
// command still runs in a fresh shell exactly as `sh -c` would.
const StubArg = "__boxsh_exec_stub"

// stubFD is the descriptor on which a stub receives its job.
const stubFD = 3

// job is what a stub receives.
type job struct {
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir,omitempty"`
}

// RunStub is the whole life of an exec stub. It reads one job from fd 3 and
// executes it; it only returns by exiting. Call it first thing in main when
// os.Args[1] == StubArg.
func RunStub() {
	ctl := os.NewFile(stubFD, "job")
	b, err := io.ReadAll(io.LimitReader(ctl, 64<<20))
	_ = ctl.Close()
	if err != nil || len(b) == 0 {
		os.Exit(0) // the pool was closed before a job came
	}
	var j job
	if err := json.Unmarshal(b, &j); err != nil {
		fmt.Fprintf(os.Stderr, "boxsh: bad job: %v\n", err)
		os.Exit(126)
	}
	if j.Dir != "" {
		if err := os.Chdir(j.Dir); err != nil {
			fmt.Fprintf(os.Stderr, "boxsh: cwd: %v\n", err)
			os.Exit(126)
		}
	}
	err = syscall.Exec(j.Path, j.Argv, j.Env)
	fmt.Fprintf(os.Stderr, "boxsh: exec %s: %v\n", j.Path, err)
	if os.IsNotExist(err) {
		os.Exit(127)
	}
	os.Exit(126)
}
