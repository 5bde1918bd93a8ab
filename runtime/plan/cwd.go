package plan

import (
	"path/filepath"
	"strings"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
)

// SandboxCwd returns where a process started from the host directory cwd
// starts inside the sandbox.
//
//   - In a cow bind's SRC: the same place under its DST (the first such bind
//     in flag order), so that relative writes go through the overlay. Where
//     the view is in place too (policy.Sandbox.InPlace), cwd itself.
//   - When the sandbox shows cwd: cwd itself. The sandbox shows it when it is
//     in a bound directory, or is a directory the mounts need, such as a
//     parent of a bind.
//   - In /tmp: cwd itself. The sandbox's /tmp is its own, and runc makes the
//     directory there, empty, so the process keeps its path (as boxsh v4 does)
//     without seeing anything of the host's.
//   - Otherwise "/". The v3 and v4 suites require that no other unbound
//     directory appear inside, even empty.
func SandboxCwd(sb policy.Sandbox, host HostFacts, cwd string) string {
	if !filepath.IsAbs(cwd) {
		return "/"
	}
	cwd = filepath.Clean(cwd)
	for _, b := range sb.Binds {
		if b.Mode == policy.CopyOnWrite && pathtree.Within(cwd, b.Src) {
			if sb.InPlace {
				return cwd // the view at SRC
			}
			return filepath.Join(b.Dst, strings.TrimPrefix(cwd, b.Src))
		}
	}
	// Directories whose host content the sandbox shows.
	var shown []string
	// Mount points: they and their parents exist inside.
	points := []string{"/proc", "/dev/pts", "/dev/shm", "/dev/mqueue", "/tmp", initproto.InitMountPath}
	for _, hp := range host.System {
		points = append(points, hp.Path)
		if hp.Link == "" && hp.Dir {
			shown = append(shown, hp.Path)
		}
	}
	if sb.HostSystem {
		for _, hp := range host.Whole {
			points = append(points, hp.Path)
			shown = append(shown, hp.Path)
		}
	} else {
		for _, hp := range host.Etc {
			points = append(points, hp.Path)
			if hp.Dir && !etcSymlink(hp) {
				shown = append(shown, hp.Path)
			}
		}
	}
	for _, b := range sb.Binds {
		shown = append(shown, b.Dst)
		points = append(points, b.Dst)
	}
	for _, d := range shown {
		if pathtree.Within(cwd, d) {
			return cwd
		}
	}
	for _, p := range points {
		if pathtree.Within(p, cwd) {
			return cwd
		}
	}
	if pathtree.Within(cwd, "/tmp") {
		return cwd
	}
	return "/"
}
