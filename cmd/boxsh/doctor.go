package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/boxsh/boxsh/internal/hostcheck"
	"github.com/boxsh/boxsh/runtime"
)

const doctorUsage = `Usage: boxsh doctor

Check what starting a sandbox needs on this host (a build with seccomp
support, user namespaces, AppArmor, the seccomp filter boxsh runs under,
an unmasked /proc, cgroups, overlayfs, runc for boxsh spec), one check a
line: ok, warn (not needed) or FAIL with its fix. Exit status 0 when every
needed check passes, 1 when one fails, 2 for arguments (it takes none).
`

// runDoctor prints the checks of the host a sandbox needs (boxsh doctor),
// one a line, each that fails with its fix, and returns 0 when every
// needed check passes.
func runDoctor(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "boxsh: doctor takes no arguments (see boxsh --help)\n")
		return 2
	}
	checks := doctorChecks()
	for _, c := range checks {
		status := "ok  "
		switch {
		case !c.OK && c.Needed:
			status = "FAIL"
		case !c.OK:
			status = "warn"
		}
		fmt.Fprintf(stdout, "%s %s\n", status, c.Line())
	}
	if p := hostcheck.Problem(checks); p != "" {
		fmt.Fprintf(stdout, "boxsh cannot start sandboxes here: %s\n", p)
		return 1
	}
	fmt.Fprintln(stdout, "boxsh can start sandboxes here")
	return 0
}

// doctorChecks are the host's checks (hostcheck.All) and this binary's:
// its seccomp support, and runc, which runs what boxsh spec writes.
func doctorChecks() []hostcheck.Check {
	build := hostcheck.Check{Name: "seccomp support", Needed: true, OK: true, Detail: "this boxsh is built with libseccomp"}
	if err := runtime.SandboxSupported(); err != nil {
		build.OK, build.Detail = false, err.Error()
	}
	return append(append([]hostcheck.Check{build}, hostcheck.All()...), runcCheck())
}

// runcCheck reports the runc that would run a bundle of boxsh spec: not
// needed by boxsh --sandbox itself.
func runcCheck() hostcheck.Check {
	c := hostcheck.Check{Name: "runc (for boxsh spec)"}
	path, err := exec.LookPath("runc")
	if err != nil {
		c.Detail = "not found in PATH"
		c.Fix = "install runc (Debian: apt-get install runc) to run the bundles of boxsh spec; boxsh --sandbox does not need it"
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		c.Detail = fmt.Sprintf("%s --version: %v", path, err)
		return c
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	c.OK, c.Detail = true, path+": "+first
	return c
}
