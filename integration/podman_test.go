//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file run boxsh --sandbox inside Debian's Podman:
// rootless, as the user that runs the tests (with the subordinate ids
// scripts/podman-engine.sh gives it), and rootful, through the API service
// that script starts on podmanServiceSocket for the group of that user.

// podmanServiceSocket is where scripts/podman-engine.sh's rootful service
// listens.
const podmanServiceSocket = "/run/boxsh-podman/podman.sock"

// podmanFlags are the podman run flags the README names for boxsh
// --sandbox in a container.
var podmanFlags = []string{"--security-opt", "unmask=ALL", "--security-opt", "seccomp=unconfined"}

// requirePodman finds Podman, rootful (through its service) or rootless,
// and imports an image of busybox and boxsh's binaries into it; it skips
// the test, saying why, where that Podman cannot run.
func requirePodman(t *testing.T, rootful bool) *dockerEngine {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("Podman is not installed (as root: scripts/podman-engine.sh installs Debian's podman)")
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("busybox is not installed (Debian: apt-get install busybox-static)")
	}
	d := &dockerEngine{argv: []string{"podman"}}
	if rootful {
		if _, err := os.Stat(podmanServiceSocket); err != nil {
			t.Skip("no rootful Podman service: as root, scripts/podman-engine.sh starts one")
		}
		d.argv = append(d.argv, "--remote", "--url", "unix://"+podmanServiceSocket)
	} else if os.Geteuid() == 0 {
		t.Skip("rootless Podman runs as an unprivileged user (just test runs the tests as one)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := d.command(ctx, "info", "--format", "{{.Host.Security.Rootless}} {{.Store.GraphDriverName}}").CombinedOutput()
	if err != nil {
		t.Skipf("Podman cannot run here (podman info: %s): as root, scripts/podman-engine.sh sets it up", firstLine(strings.TrimSpace(string(out))))
	}
	t.Logf("Podman (rootless, storage driver): %s", strings.TrimSpace(string(out)))
	d.importImage(t, ctx)
	return d
}

// TestPodman runs boxsh --sandbox in Debian's Podman, rootful and rootless,
// as the container's root and as another of its users. With the README's
// flags it works, cow: and --try included, and boxsh doctor says so.
// Without any of them, the start fails with one line naming every missing
// flag, and so does doctor.
func TestPodman(t *testing.T) {
	for _, engine := range []struct {
		name    string
		rootful bool
	}{{"rootless", false}, {"rootful", true}} {
		t.Run(engine.name, func(t *testing.T) {
			d := requirePodman(t, engine.rootful)
			for _, user := range []struct{ name, flag, uid string }{{"root", "", "0"}, {"user", "1000:1000", "1000"}} {
				t.Run(user.name, func(t *testing.T) {
					r := d.run(t, user.flag, podmanFlags, containerWorks)
					require.Equal(t, 0, r.code(), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
					assert.Equal(t, "outside "+user.uid+"\ninside 0\ndst base more \nsrc base\nrepo base, try tried\n", r.stdout, r.stderr)
					doctorSays(t, d, user.flag, podmanFlags, true)
				})
			}
			for _, c := range []struct {
				name    string
				flags   []string
				missing []string
			}{
				{"without-unmask", podmanFlags[2:], []string{"--security-opt unmask=ALL"}},
				{"without-seccomp", podmanFlags[:2], []string{"--security-opt seccomp=unconfined"}},
				{"without-both", nil, []string{"--security-opt unmask=ALL", "--security-opt seccomp=unconfined"}},
			} {
				t.Run(c.name, func(t *testing.T) {
					r := d.run(t, "", c.flags, `PATH=/usr/local/bin:/bin; exec boxsh --sandbox -c 'echo ran'`)
					require.NotEqual(t, 0, r.code(), "stdout: %s", r.stdout)
					first := firstLine(r.stderr)
					assert.True(t, strings.HasPrefix(first, "boxsh: cannot start the sandbox: run the container with "+strings.Join(c.missing, " ")+" (Podman): "), first)
					doctorSays(t, d, "", c.flags, false, c.missing...)
				})
			}
		})
	}
}
