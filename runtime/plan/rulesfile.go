package plan

import (
	"encoding/json"
	"path/filepath"

	"github.com/boxsh/boxsh/internal/initproto"
)

// rulesFileContent is the content of the rules file (see Plan.Files).
func rulesFileContent(fr FileRules, protect []HostPath) ([]byte, error) {
	entries := []initproto.PolicyRule{}
	for _, rp := range fr.DenyRead {
		entries = append(entries, initproto.PolicyRule{Path: rp.Path, Rule: "denyRead " + rp.Rule, Write: false})
	}
	for _, rp := range fr.DenyWrite {
		entries = append(entries, initproto.PolicyRule{Path: rp.Path, Rule: "denyWrite " + rp.Rule, Write: true})
	}
	for _, hp := range protect {
		rule := "hard-denied " + filepath.Base(hp.Path) + " (no setting makes it writable)"
		if hp.Reason != "" {
			rule = "hard-denied " + filepath.Base(hp.Path) + " (no setting makes it writable: " + hp.Reason + ")"
		}
		entries = append(entries, initproto.PolicyRule{Path: hp.Path, Rule: rule, Write: true})
	}
	return json.Marshal(entries)
}
