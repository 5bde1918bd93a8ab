package layout

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/boxsh/boxsh/"

// A rule forbids the packages that match From to import those that match
// any of Not. A pattern is a package path relative to the module; "x/..."
// matches x and every package below it.
type rule struct {
	From   string
	Not    []string
	Reason string
}

var rules = []rule{
	{"agent/...", []string{"rpc", "client/...", "runtime/...", "policy", "proxy", "darwin", "cmd/..."},
		"the tool host knows only frames and tools, nothing of the front"},
	{"runtime/plan", []string{"runtime", "runtime/host", "rpc", "client/...", "agent/...", "proxy", "darwin", "cmd/..."},
		"the plan is pure: it reads host facts it is given and touches nothing"},
	{"runtime/...", []string{"rpc", "client/...", "agent/...", "cmd/..."},
		"the runtime starts boxsh-init; it does not serve protocols or run tools"},
	{"rpc", []string{"agent/...", "runtime/...", "client/...", "policy", "proxy", "darwin", "cmd/..."},
		"rpc speaks MCP to a Backend; what runs the calls is not its business"},
	{"frame", []string{"agent/...", "runtime/...", "rpc", "client/...", "tool", "largecall", "policy", "proxy", "darwin", "cmd/..."},
		"frame is the contract both sides share"},
	{"tool", []string{"agent/...", "runtime/...", "rpc", "client/...", "frame", "largecall", "policy", "proxy", "darwin", "cmd/..."},
		"the tools as data are shared by both sides"},
	{"internal/...", []string{"agent/...", "runtime/...", "rpc", "client/...", "frame", "tool", "largecall", "policy", "proxy", "darwin", "cmd/..."},
		"internal packages are leaves"},
	{"policy", []string{"agent/...", "runtime/...", "rpc", "client/...", "frame", "tool", "proxy", "darwin", "cmd/..."},
		"the policy model is a leaf every side reads"},
	{"proxy", []string{"agent/...", "runtime/...", "rpc", "client/...", "frame", "tool", "policy", "darwin", "cmd/..."},
		"the proxy decides by host name alone"},
	{"audit", []string{"agent/...", "runtime/...", "rpc", "client/...", "policy", "proxy", "darwin", "cmd/..."},
		"the audit log records what the front tells it, through a Backend and entries"},
	{"darwin", []string{"agent/...", "runtime/...", "rpc", "client/...", "cmd/..."},
		"the macOS profile is built from the policy, beside the Linux plan"},
	{"largecall", []string{"agent/...", "runtime/...", "rpc", "client/...", "audit", "policy", "proxy", "darwin", "cmd/..."},
		"the fast paths of large calls sit between the protocol layers and the contract: they know frames and tools only"},
	{"...", []string{"client/..."},
		"the Go client is the public API: only programs (cmd/) and tests (integration/) use it"},
	{"...", []string{"internal/jsonx"},
		"the fast JSON paths are behind one seam, largecall: everything else reads JSON with encoding/json"},
}

// except lists the packages a rule with From "..." does not cover.
var except = map[string][]string{
	"client/...":     {"client/...", "cmd/...", "integration/..."},
	"internal/jsonx": {"largecall"},
}

func match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// violations lists every import in graph (package → its imports, both
// relative to the module) that a rule forbids, with the rule's reason.
func violations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		for _, r := range rules {
			if !match(r.From, pkg) {
				continue
			}
		imports:
			for _, imp := range imports {
				for _, not := range r.Not {
					if !match(not, imp) {
						continue
					}
					for _, ok := range except[not] {
						if r.From == "..." && match(ok, pkg) {
							continue imports
						}
					}
					out = append(out, fmt.Sprintf("%s imports %s: %s", pkg, imp, r.Reason))
					continue imports
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// moduleGraph is the module's import graph from `go list`, non-test imports
// of the module's own packages only, for GOOS=linux and GOOS=darwin.
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	for _, goos := range []string{"linux", "darwin"} {
		cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		require.NoError(t, err, "go list (GOOS=%s)", goos)
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for {
			var p struct {
				ImportPath string
				Imports    []string
			}
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else {
				require.NoError(t, err)
			}
			pkg := strings.TrimPrefix(p.ImportPath, module)
			for _, imp := range p.Imports {
				if rel, ok := strings.CutPrefix(imp, module); ok {
					graph[pkg] = append(graph[pkg], rel)
				}
			}
			if _, ok := graph[pkg]; !ok {
				graph[pkg] = nil
			}
		}
	}
	return graph
}

func TestImportRules(t *testing.T) {
	graph := moduleGraph(t)
	require.Contains(t, graph, "runtime/plan", "go list saw the module's packages")
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

func TestImportRulesCatchForbiddenImports(t *testing.T) {
	graph := map[string][]string{
		"agent/bash":   {"rpc", "tool"},
		"runtime/plan": {"runtime/host", "policy"},
		"tool":         {"internal/jsonx"},
		"largecall":    {"internal/jsonx", "frame", "tool"},
		"frame":        {"largecall"},
		"policy":       {"client"},
		"cmd/boxsh":    {"client", "rpc", "runtime/host"},
		"integration":  {"client/session"},
		"proxy":        nil,
	}
	assert.Equal(t, []string{
		"agent/bash imports rpc: " + rules[0].Reason,
		"frame imports largecall: " + rules[4].Reason,
		"policy imports client: " + rules[len(rules)-2].Reason,
		"policy imports client: " + rules[7].Reason,
		"runtime/plan imports runtime/host: " + rules[1].Reason,
		"tool imports internal/jsonx: " + rules[len(rules)-1].Reason,
	}, violations(graph))
}
