package layout

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/boxsh/boxsh/"

// A rule forbids the packages that match From, but for those that match
// any of Except, to import those that match any of Not. A pattern is a
// package path relative to the module; "x/..." matches x and every
// package below it, "..." every package.
type rule struct {
	From   string
	Not    []string
	Reason string
	Except []string
}

var rules = []rule{
	{From: "internal/toolhost/...", Not: []string{"rpc", "client/...", "runtime/...", "policy", "internal/front/...", "darwin", "cmd/..."},
		Reason: "the tool host knows only frames and tools, nothing of the front"},
	{From: "runtime/plan", Not: []string{"runtime", "runtime/host", "rpc", "client/...", "internal/toolhost/...", "internal/front/...", "darwin", "cmd/..."},
		Reason: "the plan is pure: it reads host facts it is given and touches nothing"},
	{From: "runtime/...", Not: []string{"rpc", "client/...", "internal/toolhost/...", "cmd/..."},
		Reason: "the runtime starts boxsh-init; it does not serve protocols or run tools"},
	{From: "rpc", Not: []string{"internal/toolhost/...", "runtime/...", "client/...", "policy", "internal/front/proxy", "darwin", "cmd/..."},
		Reason: "rpc speaks MCP to a Backend; what runs the calls is not its business"},
	{From: "internal/initproto", Not: []string{"internal/toolhost/...", "runtime/...", "rpc", "client/...", "internal/tool", "internal/largecall", "policy", "internal/front/...", "darwin", "cmd/..."},
		Reason: "initproto is the contract both sides share"},
	{From: "internal/tool", Not: []string{"internal/toolhost/...", "runtime/...", "rpc", "client/...", "internal/initproto", "internal/largecall", "policy", "internal/front/...", "darwin", "cmd/..."},
		Reason: "the tools as data are shared by both sides"},
	{From: "internal/...", Not: []string{"internal/toolhost/...", "runtime/...", "rpc", "client/...", "internal/initproto", "internal/tool", "internal/largecall", "policy", "internal/front/...", "darwin", "cmd/..."},
		Reason: "the small internal packages are leaves",
		Except: []string{"internal/toolhost/...", "internal/initproto", "internal/tool", "internal/largecall", "internal/front/audit", "internal/front/fleet", "internal/front/proxy"}},
	{From: "policy", Not: []string{"internal/toolhost/...", "runtime/...", "rpc", "client/...", "internal/initproto", "internal/tool", "internal/front/...", "darwin", "cmd/..."},
		Reason: "the policy model is a leaf every side reads"},
	{From: "internal/front/proxy", Not: []string{"internal/toolhost/...", "runtime/...", "rpc", "client/...", "internal/initproto", "internal/tool", "policy", "darwin", "cmd/..."},
		Reason: "the proxy decides by host name alone"},
	{From: "internal/front/audit", Not: []string{"internal/toolhost/...", "runtime/...", "rpc", "client/...", "policy", "internal/front/proxy", "darwin", "cmd/..."},
		Reason: "the audit log records what the front tells it, through a Backend and entries"},
	{From: "darwin", Not: []string{"internal/toolhost/...", "runtime/...", "rpc", "client/...", "cmd/..."},
		Reason: "the macOS profile is built from the policy, beside the Linux plan"},
	{From: "internal/largecall", Not: []string{"internal/toolhost/...", "runtime/...", "rpc", "client/...", "internal/front/...", "policy", "darwin", "cmd/..."},
		Reason: "the fast paths of large calls sit between the protocol layers and the contract: they know frames and tools only"},
	{From: "internal/front/fleet", Not: []string{"internal/toolhost/...", "client", "internal/front/audit", "darwin", "cmd/..."},
		Reason: "the fleet starts runtimes on sessions and hands rpc their backends; the program wires it (the audit log, through Config.Wrap)"},
	{From: "client/apitype", Not: []string{"..."},
		Reason: "the wire types are types only, which the server and the Go client share: they import nothing of the module"},
	{From: "internal/toolhost/readhead", Not: []string{"internal/toolhost/imaging", "internal/toolhost/files"},
		Reason: "the front links readhead for the reads it serves: no image decoder, nothing else of the read tool"},
	{From: "...", Not: []string{"client/..."},
		Reason: "the Go client is the public API: only programs (cmd/), the fleet (its sessions) and tests (integration/) use it",
		Except: []string{"client/...", "cmd/...", "integration/...", "internal/front/fleet"}},
	{From: "...", Not: []string{"internal/jsonx"},
		Reason: "the fast JSON paths are behind one seam, largecall: everything else reads JSON with encoding/json",
		Except: []string{"internal/largecall"}},
}

// shared are the packages every package may import, whatever the rules
// forbid: they import nothing of the module (their rule says so).
var shared = []string{"client/apitype"}

func match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// covers reports whether rule r applies to package pkg.
func (r rule) covers(pkg string) bool {
	if !match(r.From, pkg) {
		return false
	}
	for _, ex := range r.Except {
		if match(ex, pkg) {
			return false
		}
	}
	return true
}

// violations lists every import in graph (package → its imports, both
// relative to the module) that a rule forbids, with the rule's reason.
func violations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		for _, r := range rules {
			if !r.covers(pkg) {
				continue
			}
		imports:
			for _, imp := range imports {
				if slices.Contains(shared, imp) {
					continue
				}
				for _, not := range r.Not {
					if match(not, imp) {
						out = append(out, fmt.Sprintf("%s imports %s: %s", pkg, imp, r.Reason))
						continue imports
					}
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
		"internal/toolhost/bash": {"rpc", "internal/tool"},
		"runtime/plan":           {"runtime/host", "policy"},
		"internal/tool":          {"internal/jsonx"},
		"internal/largecall":     {"internal/jsonx", "internal/initproto", "internal/tool"},
		"internal/initproto":     {"internal/largecall"},
		"policy":                 {"client"},
		"cmd/boxsh":              {"client", "rpc", "runtime/host"},
		"integration":            {"client/session"},
		"internal/front/proxy":   nil,
		"internal/front/fleet":   {"rpc", "runtime", "client/session", "client", "cmd/boxsh"},
		"internal/durable":       {"rpc"},
		"rpc":                    {"client/apitype", "client"},
		"client/apitype":         {"internal/tool"},
	}
	assert.Equal(t, []string{
		"client/apitype imports internal/tool: " + rules[13].Reason,
		"internal/durable imports rpc: " + rules[6].Reason,
		"internal/front/fleet imports client: " + rules[12].Reason,
		"internal/front/fleet imports cmd/boxsh: " + rules[12].Reason,
		"internal/initproto imports internal/largecall: " + rules[4].Reason,
		"internal/tool imports internal/jsonx: " + rules[len(rules)-1].Reason,
		"internal/toolhost/bash imports rpc: " + rules[0].Reason,
		"policy imports client: " + rules[len(rules)-2].Reason,
		"policy imports client: " + rules[7].Reason,
		"rpc imports client: " + rules[3].Reason,
		"rpc imports client: " + rules[len(rules)-2].Reason,
		"runtime/plan imports runtime/host: " + rules[1].Reason,
	}, violations(graph))
}
