package host

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// The plan's types and helpers that host preparation shares: it gathers
// the host facts, protected paths and file rules a plan is made of, and
// prepares the paths the plan's spec mounts.
type (
	HostPath  = plan.HostPath
	HostFacts = plan.HostFacts
	FileRules = plan.FileRules
	RuledPath = plan.RuledPath
)

// RulesPath is where the sandbox finds the list of the paths its policy
// covers (in its read-only root).
const RulesPath = plan.RulesPath

const (
	commondirContent = plan.CommondirContent
	deniedName       = plan.DeniedName
	deniedDirName    = plan.DeniedDirName
)

func isUnder(path, prefix string) bool                     { return plan.IsUnder(path, prefix) }
func bindShowing(sb policy.Sandbox, p string) *policy.Bind { return plan.BindShowing(sb, p) }
func etcSymlink(hp HostPath) bool                          { return plan.EtcSymlink(hp) }
func etcSet(host HostFacts) map[string]bool                { return plan.EtcSet(host) }
func inlineCandidate(m specs.Mount, etc map[string]bool) bool {
	return plan.InlineCandidate(m, etc)
}

// CowDirs are the host directories of cow:SRC:DST (see plan.CowDirs).
func CowDirs(b policy.Bind) (upper, work string) { return plan.CowDirs(b) }
