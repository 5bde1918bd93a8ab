package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
)

// ResolveTry turns --try into binds, as boxsh v3 does.
//
// It makes a new directory <parent of cwd>/.boxsh-try-XXXXXX, or
// $TMPDIR/boxsh-try-XXXXXX when the parent is not writable. A parent on
// overlayfs counts as not writable: a container's root file system cannot hold
// an overlay's changes. The sandbox gets:
//
//   - cow:CWD:DST, where DST is the directory's "work" subdirectory. The shell
//     starts there, in the merged view of cwd.
//   - the home directory read-only, unless the command line binds it, or it is
//     cwd or inside it;
//   - the host's /etc, /var and /run read-only (policy.Sandbox.HostSystem).
//
// It returns the sandbox, whose last bind is the cow bind, and DST, the
// directory of the changes.
func ResolveTry(sb policy.Sandbox, cwd, home string) (policy.Sandbox, string, error) {
	if !sb.Try {
		return sb, "", nil
	}
	cwd = filepath.Clean(cwd)
	if cwd == "/" {
		return sb, "", policy.BindErrorf("--try: the working directory cannot be /")
	}
	tmp, err := "", errors.ErrUnsupported
	if parent := filepath.Dir(cwd); !onOverlayFS(parent) {
		tmp, err = os.MkdirTemp(parent, ".boxsh-try-")
	}
	if err != nil {
		if tmp, err = os.MkdirTemp("", "boxsh-try-"); err != nil {
			return sb, "", fmt.Errorf("--try: %w", err)
		}
	}
	if onOverlayFS(tmp) {
		os.Remove(tmp)
		return sb, "", fmt.Errorf("--try: the directory above %s and the temporary directory (%s) are on overlayfs (a container's root file system), where the kernel cannot keep the changes: "+
			"run in a directory whose parent is on a volume or a tmpfs, or set TMPDIR to one (Docker and Podman: -v or --tmpfs; Kubernetes: an emptyDir volume)", cwd, filepath.Dir(tmp))
	}
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real
	}
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		os.Remove(tmp)
		return sb, "", fmt.Errorf("--try: %w", err)
	}
	out := sb
	out.Enabled, out.Try, out.HostSystem = true, false, true
	out.Binds = slices.Clone(sb.Binds)
	if home != "" && filepath.IsAbs(home) {
		home = filepath.Clean(home)
		bound := slices.ContainsFunc(out.Binds, func(b policy.Bind) bool { return b.Dst == home })
		if fi, err := os.Stat(home); err == nil && fi.IsDir() && !pathtree.Within(home, cwd) && !bound {
			out.Binds = append(out.Binds, policy.Bind{Mode: policy.ReadOnly, Src: home, Dst: home})
		}
	}
	out.Binds = append(out.Binds, policy.Bind{Mode: policy.CopyOnWrite, Src: cwd, Dst: work})
	return out, work, nil
}
