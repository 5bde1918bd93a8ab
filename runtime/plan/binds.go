package plan

import (
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
)

// orderBinds checks the binds and puts each after the binds that contain
// its destination (stable: flag order among the others).
func orderBinds(binds []policy.Bind) ([]policy.Bind, error) {
	seen := map[string]policy.Bind{}
	for _, b := range binds {
		switch b.Mode {
		case policy.ReadOnly, policy.ReadWrite, policy.CopyOnWrite:
		default:
			return nil, policy.BindErrorf("--bind %s: unknown mode %q", b, b.Mode)
		}
		for _, p := range []string{b.Src, b.Dst} {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				return nil, policy.BindErrorf("--bind %s: %q is not a clean absolute path", b, p)
			}
		}
		for _, r := range reservedDsts {
			if b.Dst == r || (r != "/" && r != "/dev" && pathtree.Within(b.Dst, r)) {
				return nil, policy.BindErrorf("--bind %s: cannot bind over %s", b, r)
			}
		}
		if b.Mode == policy.CopyOnWrite {
			if pathtree.Within(b.Dst, b.Src) || pathtree.Within(b.Src, b.Dst) {
				return nil, policy.BindErrorf("--bind %s: SRC and DST must not contain one another", b)
			}
			if _, work := CowDirs(b); pathtree.Within(work, b.Src) {
				return nil, policy.BindErrorf("--bind %s: the work directory %s must not be in SRC", b, work)
			}
		}
		if prev, dup := seen[b.Dst]; dup {
			return nil, policy.BindErrorf("--bind %s: %s is already bound by --bind %s", b, b.Dst, prev)
		}
		seen[b.Dst] = b
	}
	out := slices.Clone(binds)
	slices.SortStableFunc(out, func(a, b policy.Bind) int { return pathtree.Depth(a.Dst) - pathtree.Depth(b.Dst) })
	return out, nil
}

// bindMount is the mount of a --bind.
func bindMount(b policy.Bind) specs.Mount {
	switch b.Mode {
	case policy.ReadOnly:
		return specs.Mount{Destination: b.Dst, Type: "bind", Source: b.Src, Options: slices.Clone(bindRO)}
	case policy.ReadWrite:
		return specs.Mount{Destination: b.Dst, Type: "bind", Source: b.Src, Options: slices.Clone(bindRW)}
	}
	upper, work := CowDirs(b)
	return specs.Mount{
		Destination: b.Dst,
		Type:        "overlay",
		Source:      "overlay",
		Options: []string{
			"lowerdir=" + overlayEscape(b.Src),
			"upperdir=" + overlayEscape(upper),
			"workdir=" + overlayEscape(work),
			// Whiteouts and opaque directories as user.overlay.*
			// attributes, which a user namespace may set.
			"userxattr",
			// As boxsh v3: no inode numbers composed from the layers,
			// whose overflow fails copy-up on some file systems.
			"xino=off",
			"nosuid",
			"nodev",
		},
	}
}

// CowDirs returns the host directories of cow:SRC:DST, as in boxsh v3.
//
//   - upper is DST itself, the upper layer, which receives the writes and the
//     whiteouts for deletions.
//   - work is the overlay's work directory, policy.CowWorkDir: <parent of
//     DST>/.boxsh/<name of DST>, or .boxsh-UID in a directory other users may
//     write to (/tmp).
//
// Inside the sandbox, the merged view of SRC and DST is mounted at DST.
func CowDirs(b policy.Bind) (upper, work string) {
	return b.Dst, policy.CowWorkDir(b.Dst)
}

// overlayEscape escapes the characters that separate overlay options
// (",") and lower layers (":") in a path.
func overlayEscape(p string) string {
	var sb strings.Builder
	for _, r := range p {
		if r == '\\' || r == ',' || r == ':' {
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// checkInPlace refuses, with --in-place, a cow bind whose SRC is or holds what
// the runtime or boxsh manage.
//
// Those are the root, /dev, /proc and /.boxsh. The bind's view there would
// cover them.
func checkInPlace(sb policy.Sandbox) error {
	if !sb.InPlace {
		return nil
	}
	for _, b := range sb.Binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		for _, r := range reservedDsts {
			if pathtree.Within(r, b.Src) || (r != "/" && pathtree.Within(b.Src, r)) {
				return policy.BindErrorf("--bind %s with --in-place: its view at %s would cover %s", b, b.Src, r)
			}
		}
	}
	return nil
}

// inPlaceViews returns the mounts that show each cow bind's merged view at its
// SRC too (policy.Sandbox.InPlace).
//
// They are binds of the overlay mounted at DST inside rootfs, after every
// mount of the tree. So the view covers what shows SRC, and holds what is
// mounted under DST.
func inPlaceViews(sb policy.Sandbox, rootfs string) []specs.Mount {
	if !sb.InPlace {
		return nil
	}
	var views []specs.Mount
	for _, b := range sb.Binds {
		if b.Mode == policy.CopyOnWrite {
			views = append(views, specs.Mount{Destination: b.Src, Type: "bind", Source: filepath.Join(rootfs, b.Dst), Options: slices.Clone(bindRW)})
		}
	}
	slices.SortStableFunc(views, func(a, b specs.Mount) int { return pathtree.Depth(a.Destination) - pathtree.Depth(b.Destination) })
	return views
}

// BindShowing returns the most specific bind of sb that shows the sandbox path
// p, or nil.
//
// Of equal binds, it returns the last, since they are mounted in order.
func BindShowing(sb policy.Sandbox, p string) *policy.Bind {
	var via *policy.Bind
	for i, b := range sb.Binds {
		if pathtree.Within(p, b.Dst) && (via == nil || len(b.Dst) >= len(via.Dst)) {
			via = &sb.Binds[i]
		}
	}
	return via
}
