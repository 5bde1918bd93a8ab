package tool

// NetworkPolicy is the name of the network_policy tool.
const NetworkPolicy = "network_policy"

// NetworkPolicyDef defines the network_policy tool, which the front answers.
var NetworkPolicyDef = Define[NoArgs, NetworkPolicyOutput](Info{Name: NetworkPolicy, Order: 210, BeyondV3: true, Side: Front,
	Description: "Tell what the sandbox's network allows now, before trying: the mode (disabled: no network; allowlist: only the allowed domains, through boxsh's proxy; allow_all: the host's network) and, in allowlist mode, the allowed and denied domain patterns as they stand (the operator may change them while the sandbox runs).",
	Annotations: Annotations{Title: "Network Policy", ReadOnlyHint: true}})

// NetworkPolicyOutput is the structured result of the network_policy tool.
type NetworkPolicyOutput struct {
	Mode    string   `json:"mode" enum:"disabled,allowlist,allow_all" doc:"The network mode"`
	Allowed []string `json:"allowed" nullable:"false" doc:"Allowed domain patterns (allowlist mode): a name, *.name for its subdomains, optionally :port"`
	Denied  []string `json:"denied" nullable:"false" doc:"Denied domain patterns (allowlist mode), which win over the allowed ones"`
}
