package policy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// How each setting of a file that is not trusted is merged (see
// addNarrowing). Every key of Settings must be here: a test checks it, so
// that a new setting cannot widen the policy by default.
var narrowing = map[string]string{
	"filesystem.denyRead":    "added",
	"filesystem.denyWrite":   "added",
	"filesystem.protect":     "added",
	"filesystem.allowRead":   "ignored: it would exempt paths from denyRead",
	"filesystem.allowWrite":  "ignored: it would make paths writable",
	"environment.pass":       "ignored: it would pass the user's variables (tokens) to commands",
	"environment.set":        "added for variables the user's settings neither set nor pass; ignored for those they do",
	"limits.memory":          "taken when lower than the user's",
	"limits.pids":            "taken when lower than the user's",
	"limits.cpus":            "taken when lower than the user's",
	"limits.timeoutDefault":  "taken when lower than the user's",
	"limits.maxOutput":       "taken when lower than the user's (default 10M)",
	"network.mode":           "taken when stricter than the user's (allow_all < allowlist < disabled)",
	"network.allowedDomains": "taken only when the file itself moves the mode from allow_all to allowlist; ignored otherwise",
	"network.deniedDomains":  "added",
	"network.secrets":        "ignored: it would send a value of the user's environment to the hosts it names",
	"network.secretFiles":    "ignored: it would send the credentials of the user's files to the hosts it names",
	"network.ask":            "ignored: it would let the MCP client allow hosts",
	"network.caFiles":        "ignored: it would make the proxy trust other servers",
	"network.requests":       "ignored: a rule of its own beside the user's could allow more of a host",
}

// defaultMaxOutput is the cap of each output stream of a bash call when
// no setting gives one (internal/toolhost/bash.MaxStream).
const defaultMaxOutput = 10 << 20

// networkStrictness orders the network modes, the least strict first.
var networkStrictness = []string{NetworkAllowAll, NetworkAllowlist, NetworkDisabled}

// addNarrowing merges settings s from source, a file the user has not trusted,
// so that it can only narrow the policy merged so far.
//
// It adds denyRead, denyWrite and deniedDomains rules, variables that the
// user's settings do not set or pass, lower limits and a stricter network
// mode. Everything else is left out. It returns what it left out, as "key
// value" (value as JSON), in a stable order.
func (m *Merger) addNarrowing(s Settings, source Source) (ignored []string) {
	ignore := func(key string, v any) {
		b, _ := json.Marshal(v)
		ignored = append(ignored, key+" "+string(b))
	}
	fs := &s.Filesystem
	if len(fs.AllowRead) > 0 {
		ignore("filesystem.allowRead", fs.AllowRead)
		fs.AllowRead = nil
	}
	if len(fs.AllowWrite) > 0 {
		ignore("filesystem.allowWrite", fs.AllowWrite)
		fs.AllowWrite = nil
	}
	env := &s.Environment
	if len(env.Pass) > 0 {
		ignore("environment.pass", env.Pass)
		env.Pass = nil
	}
	if len(env.Set) > 0 {
		kept := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(env.Set)) {
			if m.userEnv(k) {
				ignore("environment.set."+k, env.Set[k])
				continue
			}
			kept[k] = env.Set[k]
		}
		env.Set = kept
	}
	l := &s.Limits
	if l.Memory != "" {
		if n, _ := ParseSize(l.Memory); m.p.Memory.Set() && n >= m.p.Memory.Value {
			ignore("limits.memory", l.Memory)
			l.Memory = ""
		}
	}
	if l.Pids > 0 && m.p.Pids.Set() && l.Pids >= m.p.Pids.Value {
		ignore("limits.pids", l.Pids)
		l.Pids = 0
	}
	if l.CPUs > 0 && m.p.CPUs.Set() && l.CPUs >= m.p.CPUs.Value {
		ignore("limits.cpus", l.CPUs)
		l.CPUs = 0
	}
	if l.TimeoutDefault > 0 && m.p.TimeoutDefault.Set() && l.TimeoutDefault >= m.p.TimeoutDefault.Value {
		ignore("limits.timeoutDefault", l.TimeoutDefault)
		l.TimeoutDefault = 0
	}
	if l.MaxOutput > 0 {
		limit := int64(defaultMaxOutput)
		if m.p.MaxOutput.Set() {
			limit = m.p.MaxOutput.Value
		}
		if l.MaxOutput >= limit {
			ignore("limits.maxOutput", l.MaxOutput)
			l.MaxOutput = 0
		}
	}
	net := &s.Network
	before, _ := m.p.Network()
	if net.Mode != "" && slices.Index(networkStrictness, net.Mode) <= slices.Index(networkStrictness, before) {
		if net.Mode != before {
			ignore("network.mode", net.Mode)
		}
		net.Mode = ""
	}
	if len(net.AllowedDomains) > 0 && !(before == NetworkAllowAll && net.Mode == NetworkAllowlist) {
		ignore("network.allowedDomains", net.AllowedDomains)
		net.AllowedDomains = nil
	}
	// A secret sends a value of boxsh's environment out: a file the
	// sandbox could write must never say where to.
	for _, sec := range net.Secrets {
		ignore("network.secrets", sec.Env+" for "+strings.Join(sec.Hosts, ","))
	}
	net.Secrets = nil
	for _, f := range net.SecretFiles {
		ignore("network.secretFiles", f.Path+" for "+strings.Join(f.Hosts, ","))
	}
	net.SecretFiles = nil
	if net.Ask {
		ignore("network.ask", true)
		net.Ask = false
	}
	if len(net.CAFiles) > 0 {
		ignore("network.caFiles", net.CAFiles)
		net.CAFiles = nil
	}
	if len(net.Requests) > 0 {
		ignore("network.requests", net.Requests)
		net.Requests = nil
	}
	m.Add(s, source)
	return ignored
}

// userEnv tells whether the variable name is one the policy merged so far
// sets, or passes from boxsh's environment (baseEnv included).
func (m *Merger) userEnv(name string) bool {
	if _, set := m.p.EnvSet[name]; set {
		return true
	}
	for _, p := range append(Values(m.p.EnvPass), baseEnv...) {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, prefix) || p == name {
			return true
		}
	}
	return false
}

// UntrustedWarning returns the one line that tells the user what of the
// untrusted settings file u was ignored, and how to trust it.
//
// It is empty when nothing was ignored.
func UntrustedWarning(u UntrustedFile) string {
	if len(u.Ignored) == 0 {
		return ""
	}
	how := "after reviewing it, `boxsh policy trust " + u.Path + "` lets it widen the policy"
	if u.Untrustable != "" {
		how = "it cannot be trusted: " + u.Untrustable
	}
	return fmt.Sprintf("settings file %s is not trusted, so it can only narrow your policy: ignored %s (%s)", u.Path, strings.Join(u.Ignored, ", "), how)
}
