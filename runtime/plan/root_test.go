package plan

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/internal/initproto"
)

func TestEtcSymlink(t *testing.T) {
	for _, tc := range []struct {
		hp   HostPath
		want bool
	}{
		{HostPath{Path: "/etc/passwd"}, false},
		{HostPath{Path: "/etc/localtime", Link: "/usr/share/zoneinfo/UTC"}, true},
		{HostPath{Path: "/etc/os-release", Link: "../usr/lib/os-release"}, true},
		{HostPath{Path: "/etc/mtab", Link: "../proc/self/mounts"}, true},
		{HostPath{Path: "/etc/mtab", Link: "/proc/mounts"}, true},
		{HostPath{Path: "/etc/resolv.conf", Link: "/run/systemd/resolve/stub-resolv.conf"}, false},
		{HostPath{Path: "/etc/x", Link: "/usrlocal/x"}, false},
		{HostPath{Path: "/etc/x", Link: "y"}, false},
	} {
		assert.Equal(t, tc.want, etcSymlink(tc.hp), "%+v", tc.hp)
	}
}

func TestRootEntries(t *testing.T) {
	base := []RootEntry{{"/proc", true, ""}, {"/dev", true, ""}, {"/tmp", true, ""}, {"/etc", true, ""}, {initproto.BoxshDir, true, ""}}
	for _, tc := range []struct {
		name string
		host HostFacts
		want []RootEntry
	}{
		{"no host facts", HostFacts{}, base},
		{
			"merged /usr",
			HostFacts{System: []HostPath{{Path: "/usr", Dir: true}, {Path: "/bin", Dir: true, Link: "usr/bin"}, {Path: "/lib32"}}},
			append(slices.Clone(base), RootEntry{"/usr", true, ""}, RootEntry{"/bin", false, "usr/bin"}),
		},
		{
			"/etc: symlinks into /usr and /proc recreated, the others mount points",
			HostFacts{Etc: []HostPath{
				{Path: "/etc/localtime", Link: "/usr/share/zoneinfo/UTC"},
				{Path: "/etc/mtab", Link: "../proc/self/mounts"},
				{Path: "/etc/resolv.conf", Link: "/run/systemd/resolve/stub-resolv.conf"},
				{Path: "/etc/ssl", Dir: true},
				{Path: "/etc/passwd"},
			}},
			append(slices.Clone(base),
				RootEntry{"/etc/localtime", false, "/usr/share/zoneinfo/UTC"},
				RootEntry{"/etc/mtab", false, "../proc/self/mounts"},
				RootEntry{"/etc/resolv.conf", false, ""},
				RootEntry{"/etc/ssl", true, ""},
				RootEntry{"/etc/passwd", false, ""}),
		},
		{
			"the mount points of --try's whole /var and /run are the runtime's",
			HostFacts{Whole: []HostPath{{Path: "/var", Dir: true}}},
			base,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, rootEntries(tc.host))
		})
	}
}
