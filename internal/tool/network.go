package tool

// SandboxNetwork is the management tool that reads and changes the network
// lists of a running sandbox in allowlist mode.
const SandboxNetwork = "sandbox_network"

// SandboxNetworkArgs are the arguments of sandbox_network: the sandbox
// alone reads its lists; a replacement (allow, deny) or an edit (add_allow,
// remove_allow, add_deny, remove_deny) changes them, not both at once.
type SandboxNetworkArgs struct {
	_           struct{}  `additionalProperties:"true"`
	Sandbox     string    `json:"sandbox" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$" doc:"The sandbox: 1 to 63 letters, digits, '-' or '_', starting with a letter or digit"`
	Allow       *[]string `json:"allow,omitempty" doc:"Replace the allowed domains with these patterns ([] empties the list)"`
	Deny        *[]string `json:"deny,omitempty" doc:"Replace the denied domains with these patterns ([] empties the list)"`
	AddAllow    []string  `json:"add_allow,omitempty" doc:"Allow these patterns too"`
	RemoveAllow []string  `json:"remove_allow,omitempty" doc:"No longer allow these patterns (each must be in the list)"`
	AddDeny     []string  `json:"add_deny,omitempty" doc:"Deny these patterns too"`
	RemoveDeny  []string  `json:"remove_deny,omitempty" doc:"No longer deny these patterns (each must be in the list)"`
}

// SandboxNetworkDef is the definition of sandbox_network. The audit log
// records its changes (not its reads) itself, with the lists before and
// after, so its rule names no target.
var SandboxNetworkDef = Define[SandboxNetworkArgs, NoOutput](manage(SandboxNetwork, 130, "", "Sandbox Network", false, false,
	"Read or change the network lists of a sandbox in allowlist mode, without a restart. With the sandbox alone, answers the allowed and denied domains in force, each with its source. With allow or deny (each replaces its list) or add_allow, remove_allow, add_deny, remove_deny (edits), changes them: new connections follow the new lists at once, and open ones to destinations they refuse are closed. A pattern is a host name, *.example.com for its subdomains, or an IP address, each with an optional :port."))
