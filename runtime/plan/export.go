package plan

import (
	"github.com/boxsh/boxsh/policy"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Exported for host preparation (runtime/host), which walks and prepares
// the same paths the spec mounts.

// IsUnder tells whether path is prefix or inside it.
func IsUnder(path, prefix string) bool { return isUnder(path, prefix) }

// BindShowing is the most specific bind of sb that shows the sandbox path
// p (the last of equal ones, as they are mounted in order), or nil.
func BindShowing(sb policy.Sandbox, p string) *policy.Bind { return bindShowing(sb, p) }

// EtcSymlink tells whether the /etc entry hp is recreated as a symlink in
// the root rather than bound (see PrepareRootfs).
func EtcSymlink(hp HostPath) bool { return etcSymlink(hp) }

// EtcSet is the set of the host's /etc entries of host.
func EtcSet(host HostFacts) map[string]bool { return etcSet(host) }

// InlineCandidate tells whether the mount m may be copied into the root
// instead of bound (see Plan.Inline).
func InlineCandidate(m specs.Mount, etc map[string]bool) bool { return inlineCandidate(m, etc) }

// CommondirContent is what the placeholder of a missing .git/commondir
// holds.
const CommondirContent = commondirContent

// DeniedName is the name, among the placeholders, of the mode-0 file bound
// over the files that denyRead rules cover.
const DeniedName = deniedName

// DeniedDirName is the name, among the placeholders, of the mode-0
// directory bound over the directories that denyRead rules cover.
const DeniedDirName = deniedDirName
