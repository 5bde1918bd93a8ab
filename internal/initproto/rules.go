package initproto

// PolicyRule is one entry of the rules file that the front writes into the
// sandbox for boxsh-init.
//
// The file is a JSON array of them. Each is a path that a rule of the
// sandbox's policy covers, so that the file tools can name the rule that
// refused an access.
type PolicyRule struct {
	Path string `json:"path"`
	// Rule names the rule and its source ("denyRead .env (default)").
	Rule string `json:"rule"`
	// Write tells a rule against writes from one against reads (which
	// refuses writes too).
	Write bool `json:"write"`
}
