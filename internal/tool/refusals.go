package tool

import "strconv"

// Bounds of the network refusals that results carry.
const (
	// MaxCallRefusals bounds the refusals in a call's result.
	MaxCallRefusals = 16
	// MaxRefusalLine bounds the refusals the text line of a call's result
	// names; it counts the others.
	MaxRefusalLine = 3
	// MaxStatsRefusals bounds the refusals in sandbox_stats.
	MaxStatsRefusals = 32
)

// NetworkRefusalsMember is the member of structured content that carries
// the network refusals.
const NetworkRefusalsMember = "network_refusals"

// NetworkRefusal is a destination the network proxy refused to the sandbox.
type NetworkRefusal struct {
	Host   string `json:"host" doc:"Destination host name or address, as the proxy decided on it"`
	Port   int    `json:"port" doc:"Destination port"`
	Reason string `json:"reason" doc:"Why it was refused: \"not in the allowlist\", a denied domain, an IP address not named exactly, or not a valid host name"`
	Allow  string `json:"allow,omitempty" required:"false" doc:"The setting that would allow it: \"--allow-domain NAME\", or the denied domain to remove and the policy file that sets it; absent when none would"`
	Count  int    `json:"count,omitempty" required:"false" doc:"How many times it was refused (sandbox_stats only)"`
}

// AppendRefusals appends the member network_refusals of refs, with its
// leading comma, as encoding/json writes it.
func AppendRefusals(b []byte, refs []NetworkRefusal) []byte {
	b = append(b, `,"network_refusals":[`...)
	for i, r := range refs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"host":`...)
		b = AppendQuoted(b, r.Host)
		b = strconv.AppendInt(append(b, `,"port":`...), int64(r.Port), 10)
		b = append(b, `,"reason":`...)
		b = AppendQuoted(b, r.Reason)
		if r.Allow != "" {
			b = append(b, `,"allow":`...)
			b = AppendQuoted(b, r.Allow)
		}
		b = appendNonZero(b, `,"count":`, int64(r.Count))
		b = append(b, '}')
	}
	return append(b, ']')
}
