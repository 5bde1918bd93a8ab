package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// writePlanFiles writes the files of a plan (Plan.Files) under the root
// directory rootfs, which prepareRootfs made. A file already there is
// replaced, never written through: a symlink at its place is removed.
func writePlanFiles(rootfs string, files []plan.File) error {
	for _, f := range files {
		if err := mkdirBeneath(rootfs, filepath.Dir(f.Path)); err != nil {
			return fmt.Errorf("prepare root: %w", err)
		}
		p := filepath.Join(rootfs, f.Path)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("prepare root: %w", err)
		}
		if err := createFile(p, f.Content, 0o644); err != nil {
			return fmt.Errorf("prepare root: %w", err)
		}
	}
	return nil
}

// ResolveSandbox applies the policy p to the sandbox sb.
//
//   - Its network policy: a network namespace of the sandbox's own, unless the
//     network is open.
//   - Its allowWrite rules, as wr binds of the paths no bind exposes yet.
//
// It records the home directory, which the sandbox gets as a tmpfs of its own
// when no bind shows it (see policy.Sandbox.Home). The --cache directory is
// taken with its symbolic links resolved, so that what is checked is what is
// mounted.
func ResolveSandbox(sb policy.Sandbox, p policy.Policy, home, cwd string) (policy.Sandbox, error) {
	_, sb.NewNetNS = p.Network()
	if filepath.IsAbs(home) {
		sb.Home = filepath.Clean(home)
	}
	if sb.Cache != "" {
		if real, err := filepath.EvalSymlinks(sb.Cache); err == nil {
			sb.Cache = real
		}
	}
	extra, err := allowWriteBinds(sb, p, home, cwd)
	if err != nil {
		return sb, err
	}
	sb.Binds = append(slices.Clip(sb.Binds), extra...)
	return sb, nil
}
