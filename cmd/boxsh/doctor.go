package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/boxsh/boxsh/internal/front/hostcheck"
	"github.com/boxsh/boxsh/runtime"
	"github.com/boxsh/boxsh/runtime/host"
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
	if p := hostcheck.Summary(checks); p != "" {
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
	checks := append([]hostcheck.Check{build, launcherCheck()}, hostcheck.All()...)
	return append(checks, trialStart(checks), runcCheck())
}

// launcherCheck reports boxsh-launch, which starts every sandbox: found
// where boxsh looks for it, and of this boxsh's build.
func launcherCheck() hostcheck.Check {
	c := hostcheck.Check{Name: "sandbox launcher", Needed: true}
	initPath, _ := runtime.FindInit()
	path, err := host.FindLauncher(initPath)
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "install " + host.LauncherName + " beside boxsh (just build makes bin/" + host.LauncherName + "; install.sh installs it)"
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		c.Detail = fmt.Sprintf("%s --version: %v", path, err)
		c.Fix = "install the " + host.LauncherName + " built with this boxsh beside it"
		return c
	}
	got := strings.TrimSpace(string(out))
	if want := host.LauncherName + " " + version; got != want {
		c.Detail = fmt.Sprintf("%s is %q, this boxsh is build %s", path, got, version)
		c.Fix = "install the " + host.LauncherName + " built with this boxsh beside it"
		return c
	}
	c.OK, c.Detail = true, path
	return c
}

// trialStart starts a sandbox that runs true, as boxsh --sandbox -c true
// does, when every needed check passed: no inference from the checks is
// taken for the answer.
func trialStart(checks []hostcheck.Check) hostcheck.Check {
	c := hostcheck.Check{Name: "sandbox start", Needed: true}
	if hostcheck.Problem(checks) != "" {
		c.OK, c.Detail = true, "not tried: a check above fails"
		return c
	}
	self, err := os.Executable()
	if err != nil {
		c.Detail = "cannot find this program to start a sandbox with: " + err.Error()
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "--sandbox", "--no-audit", "-c", "echo started")
	cmd.Dir = os.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "started" {
		first, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		msg := strings.TrimPrefix(first, "boxsh: ")
		if msg == "" {
			msg = fmt.Sprint(err)
		}
		c.Detail = "a sandbox did not start: " + msg
		return c
	}
	c.OK, c.Detail = true, "a sandbox started and ran a command"
	return c
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
