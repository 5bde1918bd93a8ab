package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/policy"
)

func TestSandboxCwd(t *testing.T) {
	sb := policy.Sandbox{Enabled: true, Binds: []policy.Bind{
		{Mode: policy.ReadOnly, Src: "/home/u/ref", Dst: "/home/u/ref"},
		{Mode: policy.ReadWrite, Src: "/srv/out", Dst: "/srv/out"},
		{Mode: policy.CopyOnWrite, Src: "/home/u/proj", Dst: "/tmp/s/work"},
		{Mode: policy.CopyOnWrite, Src: "/home/u", Dst: "/tmp/s/home"},
	}}
	for _, tc := range []struct{ cwd, want string }{
		{"/home/u/proj", "/tmp/s/work"},             // a cow SRC: its DST
		{"/home/u/proj/src/x", "/tmp/s/work/src/x"}, // inside a cow SRC
		{"/home/u/other", "/tmp/s/home/other"},      // the first cow bind that contains it
		{"/home/u/ref/doc", "/tmp/s/home/ref/doc"},  // in a ro bind, but also in a cow SRC, which wins (as in v3)
		{"/srv/out", "/srv/out"},                    // a wr bind
		{"/srv", "/srv"},                            // the parent of a bind exists inside
		{"/tmp/s/work/a", "/tmp/s/work/a"},          // inside a cow DST
		{"/tmp/s", "/tmp/s"},                        // parent of cow DSTs
		{"/tmp/other", "/tmp/other"},                // /tmp is the sandbox's own: runc makes it there, empty
		{"/var/lib", "/"},                           // not in the sandbox
		{"/usr/share", "/usr/share"},                // system directory
		{"/etc/ssl/certs", "/etc/ssl/certs"},        // bound /etc directory
		{"/etc", "/etc"},
		{"/lib/x86_64-linux-gnu", "/"}, // /lib is a symlink here: getcwd never says /lib
		{"/", "/"},
		{"", "/"},
		{"relative", "/"},
	} {
		t.Run(tc.cwd, func(t *testing.T) {
			assert.Equal(t, tc.want, SandboxCwd(sb, testHost, tc.cwd))
		})
	}
	// In place, a cow SRC shows its view: the process keeps its path.
	sb.InPlace = true
	for _, cwd := range []string{"/home/u/proj", "/home/u/proj/src/x", "/home/u/other"} {
		assert.Equal(t, cwd, SandboxCwd(sb, testHost, cwd))
	}
}
