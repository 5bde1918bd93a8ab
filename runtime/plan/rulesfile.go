package plan

import (
	"encoding/json"
	"path/filepath"

	"github.com/boxsh/boxsh/frame"
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
	// path and the path, bound onto themselves so that the sandbox cannot
	// rename them: a directory that holds a mount point can be renamed,
	// and a later start would then look for the covered file elsewhere
	// (in a directory the walk skips, such as node_modules).
	Pins []string `json:",omitempty"`
}

// rulesFileContent is the content of the rules file (see Plan.Files).
func rulesFileContent(fr FileRules, protect []HostPath) ([]byte, error) {
	entries := []frame.PolicyRule{}
	for _, rp := range fr.DenyRead {
		entries = append(entries, frame.PolicyRule{Path: rp.Path, Rule: "denyRead " + rp.Rule, Write: false})
	}
	for _, rp := range fr.DenyWrite {
		entries = append(entries, frame.PolicyRule{Path: rp.Path, Rule: "denyWrite " + rp.Rule, Write: true})
	}
	for _, hp := range protect {
		rule := "hard-denied " + filepath.Base(hp.Path) + " (no setting makes it writable)"
		if hp.Reason != "" {
			rule = "hard-denied " + filepath.Base(hp.Path) + " (no setting makes it writable: " + hp.Reason + ")"
		}
		entries = append(entries, frame.PolicyRule{Path: hp.Path, Rule: rule, Write: true})
	}
	return json.Marshal(entries)
}
