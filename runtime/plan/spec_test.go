package plan

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testHost is a merged-/usr host with a few /etc entries.
var testHost = HostFacts{
	System: []HostPath{
		{Path: "/usr", Dir: true},
		{Path: "/bin", Dir: true, Link: "usr/bin"},
		{Path: "/lib", Dir: true, Link: "usr/lib"},
		{Path: "/lib64", Dir: true, Link: "usr/lib64"},
		{Path: "/sbin", Dir: true, Link: "usr/sbin"},
	},
	Etc: []HostPath{
		{Path: "/etc/alternatives", Dir: true},
		{Path: "/etc/hosts"},
		{Path: "/etc/localtime", Link: "/usr/share/zoneinfo/Etc/UTC"},
		{Path: "/etc/mtab", Link: "../proc/self/mounts"},
		{Path: "/etc/os-release", Link: "../usr/lib/os-release"},
		{Path: "/etc/passwd"},
		{Path: "/etc/resolv.conf", Link: "../run/systemd/resolve/stub-resolv.conf"},
		{Path: "/etc/ssl", Dir: true},
	},
}

// splitHost has /bin, /lib and /sbin as real directories, as before the
// /usr merge.
var splitHost = HostFacts{
	System: []HostPath{
		{Path: "/usr", Dir: true},
		{Path: "/bin", Dir: true},
		{Path: "/lib", Dir: true},
		{Path: "/lib64", Dir: true, Link: "/lib"},
		{Path: "/sbin", Dir: true},
	},
}

func testConfig(binds ...policy.Bind) SpecConfig {
	return SpecConfig{
		Sandbox:  policy.Sandbox{Enabled: true, Binds: binds},
		Args:     initArgs(initproto.InitOptions{Workers: 4, Shell: "/bin/sh"}),
		Env:      []string{"HOME=/home/u", "TERM=xterm"},
		Cwd:      "/home/u/proj",
		UID:      1000,
		GID:      1001,
		Rootfs:   "rootfs",
		InitPath: "/opt/boxsh/bin/boxsh-init",
		Host:     testHost,
		Seccomp:  seccompFor("amd64"),
		Version:  "1.2.3-test",
	}
}

func build(t *testing.T, cfg SpecConfig) *specs.Spec {
	t.Helper()
	spec, err := BuildSpec(cfg)
	require.NoError(t, err)
	return spec
}

func destinations(ms []specs.Mount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Destination)
	}
	return out
}

func mountAt(t *testing.T, spec *specs.Spec, dst string) specs.Mount {
	t.Helper()
	for _, m := range spec.Mounts {
		if m.Destination == dst {
			return m
		}
	}
	t.Fatalf("no mount at %s in %v", dst, destinations(spec.Mounts))
	return specs.Mount{}
}

func TestBuildSpecNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name   string
		netns  bool
		expect []specs.LinuxNamespaceType
	}{
		{"shared network", false, []specs.LinuxNamespaceType{specs.PIDNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.MountNamespace, specs.UserNamespace}},
		{"--new-net-ns", true, []specs.LinuxNamespaceType{specs.PIDNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.MountNamespace, specs.UserNamespace, specs.NetworkNamespace}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Sandbox.NewNetNS = tc.netns
			spec := build(t, cfg)
			var got []specs.LinuxNamespaceType
			for _, ns := range spec.Linux.Namespaces {
				assert.Empty(t, ns.Path, "new namespaces, not joined ones")
				got = append(got, ns.Type)
			}
			assert.Equal(t, tc.expect, got)
		})
	}
}

func TestBuildSpecIDMappings(t *testing.T) {
	spec := build(t, testConfig())
	assert.Equal(t, []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 1}}, spec.Linux.UIDMappings)
	assert.Equal(t, []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1001, Size: 1}}, spec.Linux.GIDMappings)
	assert.Equal(t, specs.User{UID: 0, GID: 0}, spec.Process.User)
	assert.Empty(t, spec.Linux.CgroupsPath, "no cgroup: a rootless runtime has none to give")
	assert.Nil(t, spec.Linux.Resources)
}

// The caller's mapped supplementary groups keep their gid inside; its own
// gid (root inside) and root's group are never mapped again.
func TestBuildSpecGroups(t *testing.T) {
	cfg := testConfig()
	cfg.Groups = []uint32{1003, 0, 1001, 1004, 1003}
	spec := build(t, cfg)
	assert.Equal(t, []specs.LinuxIDMapping{
		{ContainerID: 0, HostID: 1001, Size: 1},
		{ContainerID: 1003, HostID: 1003, Size: 1},
		{ContainerID: 1004, HostID: 1004, Size: 1},
	}, spec.Linux.GIDMappings)
	assert.Equal(t, []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 1}}, spec.Linux.UIDMappings)
}

func TestBuildSpecRootAndAnnotations(t *testing.T) {
	spec := build(t, testConfig())
	assert.Equal(t, &specs.Root{Path: "rootfs", Readonly: true}, spec.Root)
	assert.Equal(t, "boxsh", spec.Hostname)
	assert.Equal(t, map[string]string{VersionAnnotation: "1.2.3-test"}, spec.Annotations)
	assert.Equal(t, specs.Version, spec.Version)

	cfg := testConfig()
	cfg.Hostname, cfg.Version = "other", ""
	spec = build(t, cfg)
	assert.Equal(t, "other", spec.Hostname)
	assert.Nil(t, spec.Annotations)
}

func TestBuildSpecSystemMounts(t *testing.T) {
	spec := build(t, testConfig())
	assert.Equal(t, []string{
		"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue",
		"/usr",
		"/etc/alternatives", "/etc/hosts", "/etc/passwd", "/etc/resolv.conf", "/etc/ssl",
		"/tmp",
		initproto.InitMountPath,
	}, destinations(spec.Mounts), "the /usr-merge symlinks and /etc symlinks into /usr and /proc are in the root, not mounts; no /sys")

	assert.Equal(t, specs.Mount{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}}, mountAt(t, spec, "/proc"))
	assert.Equal(t, specs.Mount{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}}, mountAt(t, spec, "/dev"))
	pts := mountAt(t, spec, "/dev/pts")
	assert.Equal(t, "devpts", pts.Type)
	assert.Subset(t, pts.Options, []string{"newinstance", "ptmxmode=0666", "mode=0620", "nosuid"})
	for _, o := range pts.Options {
		assert.False(t, strings.HasPrefix(o, "gid="), "no gid= on devpts: rootless has no tty group")
	}
	assert.Equal(t, specs.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777"}}, mountAt(t, spec, "/dev/shm"))
	assert.Equal(t, "mqueue", mountAt(t, spec, "/dev/mqueue").Type)
	assert.Equal(t, specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}}, mountAt(t, spec, "/tmp"))

	assert.Equal(t, specs.Mount{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro", "rro", "nosuid", "nodev"}}, mountAt(t, spec, "/usr"))
	assert.Equal(t, specs.Mount{Destination: "/etc/ssl", Type: "bind", Source: "/etc/ssl", Options: []string{"rbind", "ro", "rro", "nosuid", "nodev"}}, mountAt(t, spec, "/etc/ssl"))
	assert.Equal(t, specs.Mount{Destination: "/etc/passwd", Type: "bind", Source: "/etc/passwd", Options: []string{"bind", "ro", "nosuid", "nodev"}}, mountAt(t, spec, "/etc/passwd"))
	assert.Equal(t, specs.Mount{Destination: "/etc/resolv.conf", Type: "bind", Source: "/etc/resolv.conf", Options: []string{"bind", "ro", "nosuid", "nodev"}}, mountAt(t, spec, "/etc/resolv.conf"), "a symlink out of /usr and /proc is bound, which follows it")
	assert.Equal(t, specs.Mount{Destination: initproto.InitMountPath, Type: "bind", Source: "/opt/boxsh/bin/boxsh-init", Options: []string{"bind", "ro", "nosuid", "nodev"}}, mountAt(t, spec, initproto.InitMountPath))

	assert.NotContains(t, destinations(spec.Mounts), initproto.ForkServerMountPath, "no fork server without ForkServer")

	cfg := testConfig()
	cfg.ForkServer = "/opt/boxsh/lib/boxsh/boxsh-zygote.so"
	spec = build(t, cfg)
	assert.Equal(t, specs.Mount{Destination: initproto.ForkServerMountPath, Type: "bind", Source: cfg.ForkServer, Options: []string{"bind", "ro", "nosuid", "nodev"}}, mountAt(t, spec, initproto.ForkServerMountPath),
		"the fork server is bound beside boxsh-init, where it looks")
	assert.Equal(t, filepath.Dir(initproto.InitMountPath), filepath.Dir(initproto.ForkServerMountPath))

	cfg = testConfig()
	cfg.InitPath = ""
	cfg.Host = splitHost
	spec = build(t, cfg)
	assert.Equal(t, []string{"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/usr", "/bin", "/lib", "/sbin", "/tmp"}, destinations(spec.Mounts),
		"real /bin, /lib, /sbin are bound; no boxsh-init without InitPath")
	for _, m := range spec.Mounts[5:9] {
		assert.Equal(t, []string{"rbind", "ro", "rro", "nosuid", "nodev"}, m.Options, m.Destination)
		assert.Equal(t, m.Destination, m.Source)
	}
}

func TestBuildSpecBindMounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		bind policy.Bind
		want specs.Mount
	}{
		{
			"ro", policy.Bind{Mode: policy.ReadOnly, Src: "/data/ref", Dst: "/data/ref"},
			specs.Mount{Destination: "/data/ref", Type: "bind", Source: "/data/ref", Options: []string{"rbind", "ro", "rro", "nosuid", "nodev"}},
		},
		{
			"wr", policy.Bind{Mode: policy.ReadWrite, Src: "/data/out", Dst: "/data/out"},
			specs.Mount{Destination: "/data/out", Type: "bind", Source: "/data/out", Options: []string{"rbind", "rw", "nosuid", "nodev"}},
		},
		{
			"cow", policy.Bind{Mode: policy.CopyOnWrite, Src: "/home/u/proj", Dst: "/tmp/session/work"},
			specs.Mount{Destination: "/tmp/session/work", Type: "overlay", Source: "overlay", Options: []string{
				"lowerdir=/home/u/proj",
				"upperdir=/tmp/session/work",
				"workdir=/tmp/session/.boxsh/work",
				"userxattr",
				"xino=off",
				"nosuid",
				"nodev",
			}},
		},
		{
			"cow with separators in paths", policy.Bind{Mode: policy.CopyOnWrite, Src: `/src/a,b`, Dst: `/out/c:d\e`},
			specs.Mount{Destination: `/out/c:d\e`, Type: "overlay", Source: "overlay", Options: []string{
				`lowerdir=/src/a\,b`,
				`upperdir=/out/c\:d\\e`,
				`workdir=/out/.boxsh/c\:d\\e`,
				"userxattr",
				"xino=off",
				"nosuid",
				"nodev",
			}},
		},
		{
			"bind under /usr", policy.Bind{Mode: policy.ReadWrite, Src: "/usr/local", Dst: "/usr/local"},
			specs.Mount{Destination: "/usr/local", Type: "bind", Source: "/usr/local", Options: []string{"rbind", "rw", "nosuid", "nodev"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := build(t, testConfig(tc.bind))
			last := spec.Mounts[len(spec.Mounts)-1]
			assert.Equal(t, tc.want, last, "the bind comes after the system mounts")
		})
	}
}

func TestBuildSpecBindOrder(t *testing.T) {
	ro := func(p string) policy.Bind { return policy.Bind{Mode: policy.ReadOnly, Src: p, Dst: p} }
	wr := func(p string) policy.Bind { return policy.Bind{Mode: policy.ReadWrite, Src: p, Dst: p} }
	cow := func(src, dst string) policy.Bind { return policy.Bind{Mode: policy.CopyOnWrite, Src: src, Dst: dst} }
	for _, tc := range []struct {
		name  string
		binds []policy.Bind
		want  []string
	}{
		{"flag order", []policy.Bind{wr("/b"), ro("/a"), cow("/src", "/c")}, []string{"/b", "/a", "/c"}},
		{"flag order, same depth", []policy.Bind{ro("/x/b"), wr("/y/a"), ro("/x/a")}, []string{"/x/b", "/y/a", "/x/a"}},
		{"a bind after the one that contains it", []policy.Bind{ro("/a/b"), wr("/a")}, []string{"/a", "/a/b"}},
		{"cow after its parent wr bind (as v3)", []policy.Bind{cow("/p", "/tmp/s/dst"), wr("/tmp/s")}, []string{"/tmp/s", "/tmp/s/dst"}},
		{"ro bind inside a cow DST stays visible", []policy.Bind{ro("/d/sub"), cow("/p", "/d")}, []string{"/d", "/d/sub"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := build(t, testConfig(tc.binds...))
			n := len(spec.Mounts)
			require.Greater(t, n, len(tc.want))
			assert.Equal(t, tc.want, destinations(spec.Mounts[n-len(tc.want):]))
			assert.Equal(t, initproto.InitMountPath, spec.Mounts[n-len(tc.want)-1].Destination, "system mounts first")
		})
	}
}

func TestBuildSpecErrors(t *testing.T) {
	ok := testConfig()
	for _, tc := range []struct {
		name  string
		edit  func(*SpecConfig)
		usage bool
		msg   string
	}{
		{"no rootfs", func(c *SpecConfig) { c.Rootfs = "" }, false, "no root directory"},
		{"no args", func(c *SpecConfig) { c.Args = nil }, false, "no process arguments"},
		{"try", func(c *SpecConfig) { c.Sandbox.Try = true }, false, "--try"},
		{"relative", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadOnly, Src: "rel", Dst: "rel"}}
		}, true, "not a clean absolute path"},
		{"unclean", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadOnly, Src: "/a/../b", Dst: "/a/../b"}}
		}, true, "not a clean absolute path"},
		{"mode", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: "rx", Src: "/a", Dst: "/a"}}
		}, true, "unknown mode"},
		{"root", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadOnly, Src: "/", Dst: "/"}}
		}, true, "cannot bind over /"},
		{"proc", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadWrite, Src: "/proc/sys", Dst: "/proc/sys"}}
		}, true, "cannot bind over /proc"},
		{"dev", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadWrite, Src: "/dev", Dst: "/dev"}}
		}, true, "cannot bind over /dev"},
		{".boxsh", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadWrite, Src: "/x", Dst: "/.boxsh/x"}}
		}, true, "cannot bind over /.boxsh"},
		{"cow DST in SRC", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: policy.CopyOnWrite, Src: "/p", Dst: "/p/out"}}
		}, true, "must not contain one another"},
		{"cow SRC in DST", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: policy.CopyOnWrite, Src: "/d/p", Dst: "/d"}}
		}, true, "must not contain one another"},
		{"cow work dir in SRC", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: policy.CopyOnWrite, Src: "/p/.boxsh", Dst: "/p/w"}}
		}, true, "work directory /p/.boxsh/w must not be in SRC"},
		{"duplicate DST", func(c *SpecConfig) {
			c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadOnly, Src: "/a", Dst: "/a"}, {Mode: policy.CopyOnWrite, Src: "/b", Dst: "/a"}}
		}, true, "already bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			_, err := BuildSpec(cfg)
			require.Error(t, err)
			assert.Equal(t, tc.usage, errors.Is(err, policy.ErrBind), err.Error())
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestBuildSpecProcess(t *testing.T) {
	spec := build(t, testConfig())
	p := spec.Process
	assert.Equal(t, []string{"/.boxsh/boxsh-init", "--workers", "4", "--shell", "/bin/sh", "--log-level", "warn"}, p.Args)
	assert.Equal(t, []string{"HOME=/home/u", "TERM=xterm", "PATH=" + defaultPath}, p.Env, "a PATH when there is none")
	assert.True(t, p.NoNewPrivileges)
	assert.False(t, p.Terminal)
	assert.Nil(t, p.Rlimits, "resource limits are inherited")
	assert.Equal(t, "/", p.Cwd, "/home/u/proj is not in the sandbox")
	caps := []string{"CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_MKNOD",
		"CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT"}
	assert.Equal(t, &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}, p.Capabilities, "no inheritable or ambient capabilities")
	assert.NotContains(t, caps, "CAP_SYS_ADMIN")

	cfg := testConfig(policy.Bind{Mode: policy.ReadWrite, Src: "/home/u/proj", Dst: "/home/u/proj"})
	cfg.Args = []string{"/bin/sh", "-c", "echo hi"}
	cfg.Env = []string{"PATH=/custom"}
	cfg.Terminal = true
	spec = build(t, cfg)
	assert.Equal(t, []string{"/bin/sh", "-c", "echo hi"}, spec.Process.Args)
	assert.Equal(t, []string{"PATH=/custom"}, spec.Process.Env)
	assert.True(t, spec.Process.Terminal)
	assert.Equal(t, "/home/u/proj", spec.Process.Cwd)

	cfg.Args[0] = "changed"
	assert.Equal(t, "/bin/sh", spec.Process.Args[0], "the spec has copies")
}

func TestBuildSpecMaskedAndReadonlyPaths(t *testing.T) {
	spec := build(t, testConfig())
	for _, p := range []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"} {
		assert.Contains(t, spec.Linux.MaskedPaths, p)
	}
	assert.Equal(t, []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}, spec.Linux.ReadonlyPaths)
	assert.Equal(t, seccompFor("amd64"), spec.Linux.Seccomp)

	cfg := testConfig()
	cfg.Seccomp = nil
	assert.Equal(t, DefaultSeccomp(), build(t, cfg).Linux.Seccomp)
}

// In place (policy.Sandbox.InPlace), each cow bind's overlay, mounted at
// DST inside the root, is bound at SRC too, after every other mount of
// the tree (those that show SRC, those under DST), shallower SRC first.
func TestBuildSpecInPlace(t *testing.T) {
	cfg := testConfig(
		policy.Bind{Mode: policy.CopyOnWrite, Src: "/home/u/proj", Dst: "/tmp/s/work"},
		policy.Bind{Mode: policy.ReadOnly, Src: "/home/u", Dst: "/home/u"},
		policy.Bind{Mode: policy.CopyOnWrite, Src: "/srv", Dst: "/tmp/s/srv"},
	)
	plain := build(t, cfg)
	cfg.Sandbox.InPlace = true
	spec := build(t, cfg)
	require.Equal(t, len(plain.Mounts)+2, len(spec.Mounts))
	assert.Equal(t, plain.Mounts, spec.Mounts[:len(plain.Mounts)], "the view mounts come after the others")
	rw := []string{"rbind", "rw", "nosuid", "nodev"}
	assert.Equal(t, []specs.Mount{
		{Destination: "/srv", Type: "bind", Source: filepath.Join(cfg.Rootfs, "/tmp/s/srv"), Options: rw},
		{Destination: "/home/u/proj", Type: "bind", Source: filepath.Join(cfg.Rootfs, "/tmp/s/work"), Options: rw},
	}, spec.Mounts[len(plain.Mounts):])
	assert.Equal(t, "/home/u/proj", spec.Process.Cwd, "the process starts in the project's own path")

	for _, src := range []string{"/dev", "/proc/x", "/.boxsh"} {
		cfg := testConfig(policy.Bind{Mode: policy.CopyOnWrite, Src: src, Dst: "/tmp/s/work"})
		cfg.Sandbox.InPlace = true
		_, err := BuildSpec(cfg)
		require.ErrorIs(t, err, policy.ErrBind, src)
		assert.ErrorContains(t, err, "with --in-place: its view at "+src+" would cover", src)
	}
}

func TestBuildSpecProtect(t *testing.T) {
	cfg := testConfig(policy.Bind{Mode: policy.ReadWrite, Src: "/home/u", Dst: "/home/u"})
	cfg.Protect = []HostPath{{Path: "/home/u/.bashrc"}, {Path: "/home/u/.ssh", Dir: true}}
	spec := build(t, cfg)
	n := len(spec.Mounts)
	assert.Equal(t, []specs.Mount{
		{Destination: "/home/u", Type: "bind", Source: "/home/u", Options: []string{"rbind", "rw", "nosuid", "nodev"}},
		{Destination: "/home/u/.bashrc", Type: "bind", Source: "/home/u/.bashrc", Options: []string{"bind", "ro", "nosuid", "nodev"}},
		{Destination: "/home/u/.ssh", Type: "bind", Source: "/home/u/.ssh", Options: []string{"rbind", "ro", "rro", "nosuid", "nodev"}},
	}, spec.Mounts[n-3:], "after the binds")

	// Pins are bound onto themselves, outermost first, before the
	// protected mounts.
	cfg.Protect = []HostPath{
		{Path: "/home/u/p/q/.git/hooks", Dir: true, Pins: []string{"/home/u/p/q/.git", "/home/u/p/q", "/home/u/p"}},
		{Path: "/home/u/p/.git/hooks", Dir: true, Pins: []string{"/home/u/p/.git", "/home/u/p"}},
	}
	pinned := build(t, cfg).Mounts
	var dsts []string
	for _, m := range pinned[len(pinned)-6:] {
		dsts = append(dsts, m.Destination)
	}
	assert.Equal(t, []string{"/home/u/p", "/home/u/p/q", "/home/u/p/.git", "/home/u/p/q/.git", "/home/u/p/.git/hooks", "/home/u/p/q/.git/hooks"}, dsts, "protected paths outermost first")
	assert.Equal(t, []string{"rbind", "rw", "nosuid", "nodev"}, pinned[len(pinned)-6].Options)
	assert.Equal(t, "/home/u/p", pinned[len(pinned)-6].Source)

	// A bind inside a pinned directory comes after the pin, so that the
	// pin does not hide it.
	cfg2 := testConfig(policy.Bind{Mode: policy.ReadWrite, Src: "/home/u", Dst: "/home/u"},
		policy.Bind{Mode: policy.ReadOnly, Src: "/home/u/p/docs", Dst: "/home/u/p/docs"})
	cfg2.Protect = []HostPath{{Path: "/home/u/p/.git/hooks", Dir: true, Pins: []string{"/home/u/p/.git", "/home/u/p"}}}
	var order []string
	for _, m := range build(t, cfg2).Mounts {
		if strings.HasPrefix(m.Destination, "/home/u") {
			order = append(order, m.Destination)
		}
	}
	assert.Equal(t, []string{"/home/u", "/home/u/p", "/home/u/p/docs", "/home/u/p/.git", "/home/u/p/.git/hooks"}, order)

	// A writable home: read-only right after its bind, then the
	// directories that stay writable, then what is inside them.
	cfg3 := testConfig(policy.Bind{Mode: policy.ReadWrite, Src: "/home/u", Dst: "/home/u"},
		policy.Bind{Mode: policy.ReadOnly, Src: "/home/u/p/docs", Dst: "/home/u/p/docs"})
	cfg3.Protect = []HostPath{
		{Path: "/home/u", Dir: true, Tree: true, Rebind: []string{"/home/u/p", "/home/u/.cache"}},
		{Path: "/home/u/p/.git/hooks", Dir: true, Pins: []string{"/home/u/p/.git", "/home/u/p"}},
	}
	var home []specs.Mount
	for _, m := range build(t, cfg3).Mounts {
		if strings.HasPrefix(m.Destination, "/home/u") {
			home = append(home, m)
		}
	}
	order = nil
	for _, m := range home {
		order = append(order, m.Destination+" "+m.Options[1])
	}
	assert.Equal(t, []string{"/home/u rw", "/home/u ro", "/home/u/p rw", "/home/u/.cache rw", "/home/u/p/docs ro", "/home/u/p/.git rw", "/home/u/p/.git/hooks ro"}, order)

	// Missing paths get the placeholders, or nothing without them.
	missing := []HostPath{
		{Path: "/home/u/.profile", Missing: true, MissingFrom: "/home/u/.profile"},
		{Path: "/home/u/.gnupg", Dir: true, Missing: true, MissingFrom: "/home/u/.gnupg"},
	}
	cfg.Protect = missing
	assert.Len(t, build(t, cfg).Mounts, n-2, "no placeholders: left out")
	cfg.Placeholders = "/state/ph"
	spec = build(t, cfg)
	assert.Equal(t, []specs.Mount{
		{Destination: "/home/u/.profile", Type: "bind", Source: "/state/ph/file", Options: []string{"bind", "ro", "nosuid", "nodev"}},
		{Destination: "/home/u/.gnupg", Type: "bind", Source: "/state/ph/dir", Options: []string{"rbind", "ro", "rro", "nosuid", "nodev"}},
	}, spec.Mounts[len(spec.Mounts)-2:])

	cfg.Protect = []HostPath{{Path: "relative"}}
	_, err := BuildSpec(cfg)
	assert.ErrorContains(t, err, "not a clean absolute path")
}

// TestBuildSpecGolden compares the spec of a representative policy with
// testdata/spec.golden.json; go test -run Golden -update rewrites it.
func TestBuildSpecGolden(t *testing.T) {
	cfg := testConfig(
		policy.Bind{Mode: policy.ReadOnly, Src: "/home/u/.gitconfig", Dst: "/home/u/.gitconfig"},
		policy.Bind{Mode: policy.CopyOnWrite, Src: "/home/u/proj", Dst: "/tmp/session/work"},
		policy.Bind{Mode: policy.ReadWrite, Src: "/tmp/session", Dst: "/tmp/session"},
	)
	cfg.Sandbox.NewNetNS = true
	spec := build(t, cfg)
	got, err := json.MarshalIndent(spec, "", "\t")
	require.NoError(t, err)
	got = append(got, '\n')
	golden := filepath.Join("testdata", "spec.golden.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test -run Golden -update to make it")
	assert.Equal(t, string(want), string(got))
}

// The home is a tmpfs of the sandbox's own unless a bind shows it; binds
// inside it are mounted on it (issue 24).
func TestBuildSpecPrivateHome(t *testing.T) {
	proj := policy.Bind{Mode: policy.ReadWrite, Src: "/home/u/proj", Dst: "/home/u/proj"}
	cfg := testConfig(proj)
	cfg.Sandbox.Home = "/home/u"
	spec := build(t, cfg)
	home := mountAt(t, spec, "/home/u")
	assert.Equal(t, "tmpfs", home.Type)
	assert.Contains(t, home.Options, "nosuid")
	dsts := destinations(spec.Mounts)
	assert.Less(t, slices.Index(dsts, "/home/u"), slices.Index(dsts, "/home/u/proj"), "the bind inside comes after the tmpfs")

	for name, bind := range map[string]policy.Bind{
		"ro home":  {Mode: policy.ReadOnly, Src: "/home/u", Dst: "/home/u"},
		"wr home":  {Mode: policy.ReadWrite, Src: "/home/u", Dst: "/home/u"},
		"ro /home": {Mode: policy.ReadOnly, Src: "/home", Dst: "/home"},
	} {
		cfg := testConfig(bind)
		cfg.Sandbox.Home = "/home/u"
		spec := build(t, cfg)
		assert.NotContains(t, types(spec.Mounts, "/home/u"), "tmpfs", name)
	}
	for _, h := range []string{"/", "/usr/lib/u", "/proc/self", ""} {
		cfg := testConfig()
		cfg.Sandbox.Home = h
		spec := build(t, cfg)
		for _, m := range spec.Mounts {
			if m.Type == "tmpfs" {
				assert.Contains(t, []string{"/dev", "/dev/shm", "/tmp"}, m.Destination, "no tmpfs for home %q", h)
			}
		}
	}
}

// types are the types of the mounts at dst.
func types(ms []specs.Mount, dst string) []string {
	var out []string
	for _, m := range ms {
		if m.Destination == dst {
			out = append(out, m.Type)
		}
	}
	return out
}

// --cache binds its directory at the home's .cache and points the tools'
// caches there, unless the environment already does.
func TestBuildSpecCache(t *testing.T) {
	cfg := testConfig()
	cfg.Sandbox.Home, cfg.Sandbox.Cache = "/home/u", "/ci/cache"
	cfg.Env = append(cfg.Env, "NPM_CONFIG_CACHE=/elsewhere")
	spec := build(t, cfg)
	assert.Equal(t, specs.Mount{Destination: "/home/u/.cache", Type: "bind", Source: "/ci/cache", Options: []string{"rbind", "rw", "nosuid", "nodev"}}, mountAt(t, spec, "/home/u/.cache"))
	dsts := destinations(spec.Mounts)
	assert.Less(t, slices.Index(dsts, "/home/u"), slices.Index(dsts, "/home/u/.cache"))
	env := spec.Process.Env
	assert.Contains(t, env, "XDG_CACHE_HOME=/home/u/.cache")
	assert.Contains(t, env, "GOMODCACHE=/home/u/.cache/go-mod")
	assert.Contains(t, env, "GOCACHE=/home/u/.cache/go-build")
	assert.NotContains(t, env, "npm_config_cache=/home/u/.cache/npm", "the caller's own setting wins")
}
