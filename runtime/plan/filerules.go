package plan

import (
	"path/filepath"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/internal/pathtree"
)

// FileRules are the policy's file rules resolved against the host: the
// paths, as the sandbox sees them, that BuildSpec covers.
type FileRules struct {
	// DenyRead are hidden behind an unreadable placeholder.
	DenyRead []RuledPath
	// DenyWrite stay read-only inside a writable area.
	DenyWrite []RuledPath
}

// RuledPath is a path a rule applies to.
type RuledPath struct {
	Path string
	Dir  bool
	// Rule is the rule and its source, for messages.
	Rule string
	// Pins are the directories between the wr bind that shows a denyRead
	// path and the path. They are bound onto themselves so that the
	// sandbox cannot rename them. A directory that holds a mount point can
	// be renamed, and a later start would then look for the covered file
	// elsewhere, in a directory the walk skips (such as node_modules).
	Pins []string `json:",omitempty"`
}

// DeniedName and DeniedDirName name placeholders in SpecConfig.Placeholders.
// They are the empty file and directory, mode 0, bound over what denyRead
// rules cover.
const (
	DeniedName    = "denied"
	DeniedDirName = "denied-dir"
)

// fileRuleMounts returns the mounts of the file rules, outermost first.
//
// They come after every bind, since they cover paths inside the binds:
//
//   - denyWrite paths are bound read-only onto themselves;
//   - denyRead files and directories are covered by the empty placeholders of
//     mode 0.
//
// Without placeholders (a printed spec), files are covered by /dev/null, which
// is empty and readable: the spec's user should run it with placeholders, as
// boxsh spec --bundle does. Directories are covered by an empty read-only
// tmpfs of mode 0. (runc before 1.1.8, Debian 12's, gives it the mode of the
// directory it covers instead: opencontainers/runc#3911.)
//
// Root in the sandbox has no CAP_DAC_OVERRIDE, so the placeholders answer
// "Permission denied". No cover can be changed: it is read-only, and mount is
// refused.
func fileRuleMounts(fr FileRules, placeholders string) ([]specs.Mount, error) {
	var ms []specs.Mount
	for _, rp := range fr.DenyWrite {
		if err := checkCleanAbs("denyWrite", rp.Path); err != nil {
			return nil, err
		}
		ms = append(ms, specs.Mount{Destination: rp.Path, Type: "bind", Source: rp.Path, Options: roBind(rp.Dir)})
	}
	for _, rp := range fr.DenyRead {
		if err := checkCleanAbs("denyRead", rp.Path); err != nil {
			return nil, err
		}
		switch {
		case rp.Dir && placeholders != "":
			ms = append(ms, specs.Mount{Destination: rp.Path, Type: "bind", Source: filepath.Join(placeholders, DeniedDirName), Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
		case rp.Dir:
			ms = append(ms, specs.Mount{Destination: rp.Path, Type: "tmpfs", Source: "tmpfs", Options: []string{"ro", "nosuid", "nodev", "noexec", "mode=000", "size=4k"}})
		case placeholders != "":
			ms = append(ms, specs.Mount{Destination: rp.Path, Type: "bind", Source: filepath.Join(placeholders, DeniedName), Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
		default:
			ms = append(ms, specs.Mount{Destination: rp.Path, Type: "bind", Source: "/dev/null", Options: []string{"bind", "ro", "nosuid", "noexec"}})
		}
	}
	slices.SortStableFunc(ms, func(a, b specs.Mount) int { return pathtree.Depth(a.Destination) - pathtree.Depth(b.Destination) })
	return ms, nil
}
