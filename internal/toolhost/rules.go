package toolhost

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/internal/tool"
)

// LoadPolicyRules reads the rules file the runtime wrote.
func LoadPolicyRules(path string) ([]initproto.PolicyRule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy rules: %w", err)
	}
	var rules []initproto.PolicyRule
	if err := json.Unmarshal(b, &rules); err != nil {
		return nil, fmt.Errorf("policy rules %s: %w", path, err)
	}
	return rules, nil
}

// explain adds to a file tool's failure on path the policy rule that
// refused it. It does so when the kernel's answer was a refusal and a rule
// covers the path; it names the most specific one.
func (a *Host) explain(r tool.Result, path string, write bool) tool.Result {
	if !r.IsError || len(a.cfg.Rules) == 0 || len(r.Content) == 0 {
		return r
	}
	text := strings.ToLower(r.Content[0].Text)
	// EBUSY: replacing (renaming over) a covered path, a mount point;
	// EISDIR: writing a missing protected file, whose placeholder is a
	// directory.
	if !strings.Contains(text, "permission denied") && !strings.Contains(text, "read-only file system") && !strings.Contains(text, "device or resource busy") && !strings.Contains(text, "is a directory") {
		return r
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if best := a.rule(path, write); best != nil {
		r.Content[0].Text += " (refused by the sandbox's policy: " + best.Rule + ")"
	}
	return r
}

// rule returns the most specific rule that covers the absolute path:
// rules against reads, and when write is set rules against writes too.
func (a *Host) rule(path string, write bool) *initproto.PolicyRule {
	var best *initproto.PolicyRule
	for i, rule := range a.cfg.Rules {
		if rule.Write && !write {
			continue
		}
		if pathtree.Within(path, rule.Path) && (best == nil || len(rule.Path) > len(best.Path)) {
			best = &a.cfg.Rules[i]
		}
	}
	return best
}

// DeniedBy names the rule that refuses reading the object at the
// absolute path, for list, stat and glob (files.DeniedBy, tool.Env). It
// is the rule of that very path, which the sandbox covers with its
// placeholder. What lies below a denied directory cannot be seen, except
// through an allowRead hole, which is readable.
func (a *Host) DeniedBy(path string) string {
	for _, rule := range a.cfg.Rules {
		if !rule.Write && rule.Path == path {
			return rule.Rule
		}
	}
	return ""
}
