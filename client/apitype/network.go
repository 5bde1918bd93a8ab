package apitype

// NetworkRule is one domain pattern of a sandbox's network lists, with
// where it came from: a settings file's path, a flag ("--allow-domain"), or
// the client that added it ("rest 127.0.0.1:PORT", an MCP client).
type NetworkRule struct {
	Pattern string `json:"pattern"`
	Source  string `json:"source"`
}

// NetworkPolicy is the network lists in force in a sandbox in allowlist
// mode: the answer of GET /v1/sandboxes/NAME/network (GET /v1/network of a
// server of one sandbox) and of a change. Deny wins over Allow.
type NetworkPolicy struct {
	// Mode is the sandbox's network mode: "allowlist".
	Mode  string        `json:"mode"`
	Allow []NetworkRule `json:"allow"`
	Deny  []NetworkRule `json:"deny"`
	// Closed is how many open connections a change closed, because the
	// new lists refuse their destinations (in the answer of a change).
	Closed int `json:"closed,omitempty"`
}

// NetworkChange is the body of PATCH /v1/sandboxes/NAME/network (PATCH
// /v1/network of a server of one sandbox). It has one of two shapes:
//
//   - a replacement: Allow, Deny or both, each the whole new list (an empty
//     one empties it); a list not given stays;
//   - an edit: AddAllow, RemoveAllow, AddDeny, RemoveDeny, patterns added
//     to or removed from the lists in force.
//
// A body with members of both shapes is refused, as is one that removes a
// pattern not in its list, or with a pattern that is not valid. The change
// takes effect for the connections that follow at once; the open ones that
// the new lists refuse are closed.
type NetworkChange struct {
	Allow       *[]string `json:"allow,omitempty"`
	Deny        *[]string `json:"deny,omitempty"`
	AddAllow    []string  `json:"add_allow,omitempty"`
	RemoveAllow []string  `json:"remove_allow,omitempty"`
	AddDeny     []string  `json:"add_deny,omitempty"`
	RemoveDeny  []string  `json:"remove_deny,omitempty"`
}

// Empty tells whether c changes nothing.
func (c NetworkChange) Empty() bool {
	return c.Allow == nil && c.Deny == nil && len(c.AddAllow)+len(c.RemoveAllow)+len(c.AddDeny)+len(c.RemoveDeny) == 0
}
