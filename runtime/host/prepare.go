package host

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// WritePlanFiles writes the files of a plan (Plan.Files) under the root
// directory rootfs, which PrepareRootfs made.
func WritePlanFiles(rootfs string, files []plan.File) error {
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(rootfs, f.Path), f.Content, 0o644); err != nil {
			return fmt.Errorf("prepare root: %w", err)
		}
	}
	return nil
}

// ResolveSandbox applies the policy p to the sandbox sb: its network
// policy (a network namespace of the sandbox's own unless the network is
// open) and its allowWrite rules, as wr binds of the paths no bind
// exposes yet (see AllowWriteBinds).
func ResolveSandbox(sb policy.Sandbox, p policy.Policy, home, cwd string) (policy.Sandbox, error) {
	_, sb.NewNetNS = p.Network()
	extra, err := AllowWriteBinds(sb, p, home, cwd)
	if err != nil {
		return sb, err
	}
	sb.Binds = append(slices.Clip(sb.Binds), extra...)
	return sb, nil
}
