package plan

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/boxsh/boxsh/internal/initproto"
)

// placeholderName is the name in SpecConfig.Placeholders of the file or
// directory bound over a missing protected path.
func placeholderName(hp HostPath) string {
	if hp.Dir {
		return "dir"
	}
	if pf, ok := placeholderFiles[filepath.Base(hp.Path)]; ok && hp.Content == pf.content {
		return pf.file
	}
	return "file"
}

// placeholderFiles are the placeholders with content, by the protected file's
// name, with their names in SpecConfig.Placeholders.
//
// Their content is what their readers take for nothing, where an empty file
// would be an error to them:
//
//   - git reads a commondir of "." as the git directory itself (no
//     redirection);
//   - MCP clients (Claude Code, Cursor) read an .mcp.json of no servers.
var placeholderFiles = map[string]struct{ file, content string }{
	"commondir": {"commondir", "."},
	".mcp.json": {"mcp.json", "{\"mcpServers\": {}}\n"},
}

// PlaceholderContent is what the placeholder of the missing protected
// file named name holds: "" (an empty file) but for placeholderFiles.
func PlaceholderContent(name string) string { return placeholderFiles[name].content }

// PlaceholderFiles are the names in SpecConfig.Placeholders of the
// placeholders with content, and their content.
func PlaceholderFiles() map[string]string {
	out := map[string]string{}
	for _, pf := range placeholderFiles {
		out[pf.file] = pf.content
	}
	return out
}

// PlaceholderExcludes returns the content of the sandbox's git excludes file
// (initproto.GitExcludesPath), or "" when there is nothing to exclude.
//
// It holds a pattern for each missing protected file of protect outside a git
// directory, whose placeholder is a regular file. So the sandbox's git neither
// shows nor commits the placeholder.
func PlaceholderExcludes(protect []HostPath) string {
	var names []string
	for _, hp := range protect {
		if hp.Missing && !hp.Dir && !strings.Contains(hp.Path, "/.git/") && !slices.Contains(names, filepath.Base(hp.Path)) {
			names = append(names, filepath.Base(hp.Path))
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return "# boxsh: the placeholders of missing protected files\n" + strings.Join(names, "\n") + "\n"
}

// gitExcludesEnv adds to env the git configuration that makes git read
// initproto.GitExcludesPath as its excludes file, after any GIT_CONFIG_COUNT
// entries env has. The user's own core.excludesFile is not read then.
func gitExcludesEnv(env []string) []string {
	n := 0
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			n, _ = strconv.Atoi(v)
			env = slices.Delete(env, i, i+1)
			break
		}
	}
	return append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+1),
		fmt.Sprintf("GIT_CONFIG_KEY_%d=core.excludesFile", n), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, initproto.GitExcludesPath))
}
