package plan

import (
	"fmt"
	"path/filepath"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/internal/initproto"
)

// Mount options.
var (
	// bindRO and bindRW are the options of recursive binds. "rro" makes
	// the mounts under a read-only bind read-only too. nosuid and nodev
	// change nothing a process in the sandbox could use: it has no new
	// privileges, and devices have an unmapped owner. They keep those
	// flags when the runtime remounts a bind of a host mount that has
	// them, which a user namespace must keep.
	bindRO = []string{"rbind", "ro", "rro", "nosuid", "nodev"}
	bindRW = []string{"rbind", "rw", "nosuid", "nodev"}
)

// reservedDsts are destinations a --bind may not take (nor go under, for
// /proc and /.boxsh): the root, and what the runtime or boxsh manage.
var reservedDsts = []string{"/", "/dev", "/proc", initproto.BoxshDir}

// systemMounts are the mounts every sandbox has, before the binds.
func systemMounts(host HostFacts, initPath, forkServer string) []specs.Mount {
	ms := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		// No gid= option: a rootless sandbox has no tty group to give.
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
	}
	for _, hp := range host.System {
		if hp.Link == "" && hp.Dir {
			ms = append(ms, specs.Mount{Destination: hp.Path, Type: "bind", Source: hp.Path, Options: slices.Clone(bindRO)})
		}
	}
	for _, hp := range host.Whole {
		ms = append(ms, specs.Mount{Destination: hp.Path, Type: "bind", Source: hp.Path, Options: slices.Clone(bindRO)})
	}
	for _, hp := range host.Etc {
		if etcSymlink(hp) {
			continue
		}
		ms = append(ms, specs.Mount{Destination: hp.Path, Type: "bind", Source: hp.Path, Options: roBind(hp.Dir)})
	}
	ms = append(ms, specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}})
	if initPath != "" {
		ms = append(ms, specs.Mount{Destination: initproto.InitMountPath, Type: "bind", Source: initPath, Options: []string{"bind", "ro", "nosuid", "nodev"}})
		if forkServer != "" {
			ms = append(ms, specs.Mount{Destination: initproto.ForkServerMountPath, Type: "bind", Source: forkServer, Options: []string{"bind", "ro", "nosuid", "nodev"}})
		}
	}
	return ms
}

// roBind are the options of a read-only bind: of a file, or recursively
// of a directory.
func roBind(dir bool) []string {
	if dir {
		return slices.Clone(bindRO)
	}
	return []string{"bind", "ro", "nosuid", "nodev"}
}

// checkCleanAbs tells, as an error, that the path p of a kind of mount is
// not a clean absolute path.
func checkCleanAbs(kind, p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("spec: %s path %q is not a clean absolute path", kind, p)
	}
	return nil
}
