//go:build linux

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// The examples of docs/cli.md, docs/sandbox.md (the shell's), docs/sessions.md,
// docs/policy.md and docs/network.md: command lines a reader types.

// comment is the comment that ends a shell line ("" when none).
func comment(line string) string {
	_, c, _ := strings.Cut(line, "# ")
	return strings.TrimSpace(c)
}

// splitList splits a comment's list "a, b (c, d), e" at the commas outside
// parentheses.
func splitList(s string) []string {
	var items []string
	depth, start := 0, 0
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == ',' && depth == 0:
			items = append(items, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(items, strings.TrimSpace(s[start:]))
}

// cliShellExample runs docs/cli.md's examples of the ways boxsh runs as a
// shell.
func cliShellExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	lines := shellLines(block)
	require.Len(t, lines, 6)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"script.sh": "echo \"script $0: $1 $2\"\n"})

	// An interactive shell, the default --shell (/bin/sh), on a terminal.
	term := onTerminal(t, ctx, dir, nil, lines[0])
	term.waitFor("[boxsh] ")
	term.typeIn("printf 'fl%s=%s\\n' ags \"$-\"; printf 'ex%s=%s\\n' e \"$(readlink /proc/$$/exe)\"\n")
	sh, err := filepath.EvalSymlinks("/bin/sh")
	require.NoError(t, err)
	term.waitFor("exe=" + sh)
	screen, code := term.exit()
	assert.Equal(t, 0, code)
	flags := regexp.MustCompile(`flags=(\S+)`).FindStringSubmatch(screen)
	require.NotNil(t, flags, screen)
	assert.Contains(t, flags[1], "i", "an interactive shell")

	want := []string{"hello\n", "me hi\n", "script script.sh: arg1 arg2\n", "piped\n"}
	for i, line := range lines[1:5] {
		r := runShell(t, ctx, dir, nil, line)
		require.Equal(t, 0, r.code(), "%s: %s", line, r.stderr)
		assert.Equal(t, want[i], r.stdout, line)
	}
	// The command itself, with the caller's environment.
	r := runShell(t, ctx, dir, []string{"BOXSH_DOCS_MARK=env"}, lines[5])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, scanLines(r.stdout), "BOXSH_DOCS_MARK=env")
}

// someMCPServer is a stdio MCP server of one tool, whoami, which answers
// the user id it runs as: the project's some-mcp-server, which npx finds
// in node_modules/.bin.
const someMCPServer = `#!/usr/bin/env node
const rl = require('readline').createInterface({input: process.stdin});
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  let result;
  if (m.method === 'initialize') result = {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'some-mcp-server', version: '1.0.0'}};
  else if (m.method === 'tools/list') result = {tools: [{name: 'whoami', inputSchema: {type: 'object'}}]};
  else if (m.method === 'tools/call') result = {content: [{type: 'text', text: 'uid ' + process.getuid()}]};
  const reply = result ? {jsonrpc: '2.0', id: m.id, result} : {jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'unknown method ' + m.method}};
  process.stdout.write(JSON.stringify(reply) + '\n');
});
`

// sandboxExample runs docs/sandbox.md's examples of the sandbox's modes,
// each line in a project.
func sandboxExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	lines := shellLines(block)
	require.Len(t, lines, 8)
	proj := filepath.Join(homeDir(t), "proj")
	writeFiles(t, proj, map[string]string{
		"Makefile":  "all:\n\techo built > out/result\ntest:\n\t@echo tests pass; touch tested 2>/dev/null || echo read-only\n",
		"out/.keep": "",
		"node_modules/some-mcp-server/package.json": `{"name": "some-mcp-server", "version": "1.0.0", "bin": "index.js"}`,
		"node_modules/some-mcp-server/index.js":     someMCPServer,
		".npmrc":                                    "update-notifier=false\n",
	})
	require.NoError(t, os.Chmod(filepath.Join(proj, "node_modules/some-mcp-server/index.js"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(proj, "node_modules/.bin"), 0o755))
	require.NoError(t, os.Symlink("../some-mcp-server/index.js", filepath.Join(proj, "node_modules/.bin/some-mcp-server")))

	r := runShell(t, ctx, proj, nil, lines[0])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "uid=0(root)", "root inside")
	assert.Contains(t, scanLines(r.stdout), "usr", "the system directories")

	r = runShell(t, ctx, proj, nil, lines[1])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "tests pass\nread-only\n", r.stdout, "the project read-only")
	assert.NoFileExists(t, filepath.Join(proj, "tested"))

	r = runShell(t, ctx, proj, nil, lines[2])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "built\n", fileText(t, filepath.Join(proj, "out", "result")), "out/ is writable")

	// The copy-on-write DST is a directory of the test's instead of the
	// host's /tmp/work (beside it, the overlay's work directory, which
	// homeDir's cleanup can remove).
	require.Contains(t, lines[3], "/tmp/work")
	dst := filepath.Join(homeDir(t), "work")
	r = runShell(t, ctx, proj, nil, strings.ReplaceAll(lines[3], "/tmp/work", dst))
	require.Equal(t, 0, r.code(), r.stderr)
	assert.FileExists(t, filepath.Join(proj, "Makefile"), "$PWD never changes")
	entries, err := os.ReadDir(dst)
	require.NoError(t, err)
	assert.NotEmpty(t, entries, "the deletions landed in DST")

	r = runShell(t, ctx, proj, nil, lines[4])
	assert.NotEqual(t, 0, r.code(), "no network: %s", r.stdout)

	sandboxTry(t, proj, lines[5])
	sandboxRPCTry(t, proj, lines[6])

	// Any command: a stdio MCP server, served to the official SDK from
	// the sandbox, where it runs as root.
	s := connectCommand(t, ctx, proj, nil, shellWords(t, ctx, proj, nil, lines[7]), io.Discard)
	tools, err := s.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	assert.Equal(t, "uid 0", sdkText(t, sdkCall(t, ctx, s, tools.Tools[0].Name, map[string]any{})))
	require.NoError(t, s.Close())
}

// sandboxTry runs boxsh --try on a terminal in proj: a copy-on-write
// shell, whose writes never reach proj.
func sandboxTry(t *testing.T, proj, line string) {
	t.Helper()
	term := onTerminal(t, testContext(t), proj, nil, line)
	term.waitFor("[boxsh:try] ")
	term.typeIn("echo new > new.txt; rm Makefile; echo done_$((6*7))\n")
	term.waitFor("done_42")
	screen, code := term.exit()
	assert.Equal(t, 0, code, screen)
	assert.Regexp(t, `boxsh: 2 file\(s\) changed in `+regexp.QuoteMeta(proj), screen)
	assert.NoFileExists(t, filepath.Join(proj, "new.txt"))
	assert.FileExists(t, filepath.Join(proj, "Makefile"))
}

// sandboxRPCTry serves MCP as `boxsh --rpc --try` in proj: the tools see
// the project at its path, and their writes stay in the session.
func sandboxRPCTry(t *testing.T, proj, line string) {
	t.Helper()
	ctx := testContext(t)
	var stderr lockedBuffer
	s := connectCommand(t, ctx, proj, nil, shellWords(t, ctx, proj, nil, line), &stderr)
	assert.Equal(t, "ok\n"+proj+"\n", sh(t, ctx, s, "echo ok > made.txt; cat made.txt; pwd"))
	require.NoError(t, s.Close())
	assert.NoFileExists(t, filepath.Join(proj, "made.txt"), "the project is untouched")
	assert.Regexp(t, `changes will be saved in \S+`, stderr.String())
	assert.Contains(t, stderr.String(), "1 file(s) changed", "reviewable")
}

// reviewExample runs docs/sessions.md's example of a --try session made on
// a terminal, reviewed, applied in part and discarded.
func reviewExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	lines := shellLines(block)
	require.Len(t, lines, 7)
	proj := filepath.Join(homeDir(t), "proj")
	writeFiles(t, proj, map[string]string{"a.txt": "a\n", "old.txt": "old\n", "dir/f": "f\n", "x": "x\n", "run.sh": "echo run\n"})
	require.NoError(t, os.Symlink("u", filepath.Join(proj, "link")))

	// The session makes each kind of change the changes line lists.
	term := onTerminal(t, ctx, proj, nil, lines[0])
	term.waitFor("[boxsh:try] ")
	term.typeIn("echo changed >> a.txt; echo new > new.txt; rm old.txt; rm -r dir; mkdir dir; rm x; mkdir x; chmod 755 x run.sh; rm link; ln -s t link; echo done_$((6*7))\n")
	term.waitFor("done_42")
	screen, code := term.exit()
	require.Equal(t, 0, code, screen)
	m := regexp.MustCompile(`changes will be saved in (\S+)`).FindStringSubmatch(screen)
	require.NotNil(t, m, screen)
	dst := m[1]
	summary := regexp.MustCompile(`boxsh: (\d+) file\(s\) changed in ` + regexp.QuoteMeta(proj) + `: .*\s+boxsh apply ` + regexp.QuoteMeta(dst))
	n := summary.FindStringSubmatch(screen)
	require.NotNil(t, n, "the summary at exit, then the boxsh apply line:\n%s", screen)

	// DST in place of the doc's.
	require.Contains(t, block, "../.boxsh-try-a1b2c3/work")
	sub := func(line string) string { return strings.ReplaceAll(line, "../.boxsh-try-a1b2c3/work", dst) }
	r := runShell(t, ctx, proj, nil, sub(lines[1]))
	require.Equal(t, 0, r.code(), r.stderr)
	changes := scanLines(r.stdout)
	for _, item := range splitList(comment(lines[1])) {
		assert.Contains(t, changes, item, "a change as the doc prints it")
	}
	assert.Equal(t, n[1], strconv.Itoa(len(changes)), "the summary counts the changes")

	// diff of one path.
	require.Contains(t, lines[2], "[PATH]")
	r = runShell(t, ctx, proj, nil, sub(strings.Replace(lines[2], "[PATH]", "a.txt", 1)))
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "+changed")
	assert.NotContains(t, r.stdout, "new.txt")

	r = runShell(t, ctx, proj, nil, sub(lines[3]))
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "would apply M a.txt")
	assert.Equal(t, "a\n", fileText(t, filepath.Join(proj, "a.txt")), "a dry run writes nothing")

	// apply of two paths.
	require.Contains(t, lines[4], "[PATH...]")
	r = runShell(t, ctx, proj, nil, sub(strings.Replace(lines[4], "[PATH...]", "a.txt new.txt", 1)))
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "a\nchanged\n", fileText(t, filepath.Join(proj, "a.txt")))
	assert.Equal(t, "new\n", fileText(t, filepath.Join(proj, "new.txt")))
	assert.FileExists(t, filepath.Join(proj, "old.txt"), "only the paths named")

	// sessions lists the session (with its age and size) until it is
	// discarded; SRC keeps what was not applied.
	r = runShell(t, ctx, proj, nil, lines[6])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Regexp(t, regexp.QuoteMeta(dst)+`\t\S+\t\d+(\.\d)? (B|[KMGTPE]iB)\t`, r.stdout)
	r = runShell(t, ctx, proj, nil, sub(lines[5]))
	require.Equal(t, 0, r.code(), r.stderr)
	assert.NoDirExists(t, dst)
	assert.FileExists(t, filepath.Join(proj, "old.txt"), "SRC is untouched")
	assert.FileExists(t, filepath.Join(proj, "x"))
	r = runShell(t, ctx, proj, nil, lines[6])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.NotContains(t, r.stdout, dst)
}

// auditExample runs docs/sessions.md's example of the audit log of a
// server, and of a session.
func auditExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	lines := shellLines(block)
	require.Len(t, lines, 4)
	home := homeDir(t)
	proj := filepath.Join(home, "proj")
	require.NoError(t, os.Mkdir(proj, 0o755))
	env := readerEnv(home)

	// An agent runs make test in the server's sandbox, which binds no
	// project: started in a directory under /tmp, its commands start in
	// the same, empty, directory of the sandbox's own /tmp.
	agentDir := t.TempDir()
	s := connectCommand(t, ctx, agentDir, env, shellWords(t, ctx, agentDir, env, lines[0]), io.Discard)
	sdkOK(t, ctx, s, "write", map[string]any{"path": agentDir + "/Makefile", "content": "test:\n\t@echo tested\n"}, nil)
	var out tool.BashOutput
	sdkOK(t, ctx, s, "bash", map[string]any{"command": "make test"}, &out)
	assert.Equal(t, "tested\n", out.Stdout)
	require.NoError(t, s.Close())
	fi, err := os.Stat(filepath.Join(home, "agent-audit.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	r := runShell(t, ctx, proj, env, lines[1])
	require.Equal(t, 0, r.code(), r.stderr)
	// The doc's line, its time, duration and size those of this call.
	want := regexp.QuoteMeta(comment(lines[1]))
	for _, v := range []struct{ doc, re string }{{"2026-…Z", `\d{4}-\d\d-\d\dT[\d:.]+Z`}, {"4210ms", `\d+ms`}, {"12.3 KiB", `\d+(\.\d)? (B|[KMGTPE]iB)`}} {
		require.Contains(t, want, regexp.QuoteMeta(v.doc))
		want = strings.Replace(want, regexp.QuoteMeta(v.doc), v.re, 1)
	}
	assert.Regexp(t, "(?m)^"+want+"$", r.stdout)

	// A session's log: a --try shell run's.
	r = runBoxshIn(t, ctx, proj, "", env, "--try", "-c", "echo x > f")
	require.Equal(t, 0, r.code(), r.stderr)
	m := regexp.MustCompile(`changes will be saved in (\S+)`).FindStringSubmatch(r.stderr)
	require.NotNil(t, m, r.stderr)
	require.Contains(t, lines[2], "../.boxsh-try-a1b2c3/work")
	r = runShell(t, ctx, proj, env, strings.ReplaceAll(lines[2], "../.boxsh-try-a1b2c3/work", m[1]))
	require.Equal(t, 0, r.code(), r.stderr)
	var entries []struct {
		Time string `json:"time"`
		Kind string `json:"kind"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &entries), r.stdout)
	require.Len(t, entries, 1)
	assert.Equal(t, "shell", entries[0].Kind)
	// The latest session whose source is proj: the same log.
	r = runShell(t, ctx, proj, env, lines[3])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, entries[0].Time+" shell "), r.stdout)
}

// trustExample runs docs/policy.md's example of trust. Trusting a project's
// settings file lets it widen the policy, until the file changes or is
// untrusted.
func trustExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	lines := shellLines(block)
	require.Len(t, lines, 3)
	home := homeDir(t)
	proj := filepath.Join(home, "proj")
	file := filepath.Join(proj, ".boxsh", "policy.json")
	content := `{"filesystem": {"allowRead": [".env"]}}` + "\n"
	writeFiles(t, proj, map[string]string{".boxsh/policy.json": content, ".env": "SECRET=1\n"})
	env := readerEnv(home)
	readEnv := func() runResult {
		t.Helper()
		return runBoxshIn(t, ctx, proj, "", env, "--sandbox", "--bind", "ro:"+proj, "-c", "cat .env")
	}
	r := readEnv()
	assert.NotEqual(t, 0, r.code(), "untrusted, the file only narrows: %s", r.stdout)
	assert.Contains(t, r.stderr, `ignored filesystem.allowRead [".env"]`)

	r = runShell(t, ctx, proj, env, lines[0])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "trusted "+file)
	store := filepath.Join(home, ".config", "boxsh", "trusted.json")
	fi, err := os.Stat(store)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	sum := sha256.Sum256([]byte(content))
	assert.Contains(t, fileText(t, store), hex.EncodeToString(sum[:]), "the content's SHA-256")
	assert.Contains(t, fileText(t, store), file)
	r = readEnv()
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "SECRET=1\n", r.stdout, "trusted, it widens")

	r = runShell(t, ctx, proj, env, lines[1])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Regexp(t, regexp.QuoteMeta(file)+`\s.*\strusted\n`, r.stdout)
	require.NoError(t, os.WriteFile(file, []byte(`{"filesystem": {"allowRead": [".env", "*.pem"]}}`), 0o644))
	r = runShell(t, ctx, proj, env, lines[1])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "changed since trusted")
	r = readEnv()
	assert.NotEqual(t, 0, r.code(), "changed, untrusted again: %s", r.stdout)

	// untrust of the default file.
	require.Contains(t, lines[2], " [PATH]")
	r = runShell(t, ctx, proj, env, strings.Replace(lines[2], " [PATH]", "", 1))
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "untrusted "+file)
	r = runShell(t, ctx, proj, env, lines[1])
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "no trusted settings files\n", r.stdout)
}

// settingsExample runs docs/policy.md's example of a settings file, loaded
// with --policy. It checks what each of its rules does in the sandbox.
func settingsExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	home := homeDir(t)
	proj := filepath.Join(home, "proj")
	writeFiles(t, proj, map[string]string{
		".env": "SECRET=1\n", ".env.example": "EXAMPLE=1\n", "key.pem": "KEY\n", "build/.keep": "",
		"docs/legal/terms": "terms\n", ".envrc": "export X=1\n", "deploy/run.sh": "echo deploy\n",
	})
	// A directory of the test's instead of the host's /tmp/cache.
	require.Contains(t, block, `"/tmp/cache"`)
	cache := filepath.Join(home, "cache")
	require.NoError(t, os.Mkdir(cache, 0o755))
	policyFile := filepath.Join(home, "policy.json")
	require.NoError(t, os.WriteFile(policyFile, []byte(strings.Replace(block, `"/tmp/cache"`, `"`+cache+`"`, 1)), 0o644))
	env := readerEnv(home, "GOFLAGS=-v", "NPM_TOKEN=npm-secret", "OTHER_TOKEN=other-secret")

	r := runBoxshIn(t, ctx, proj, "", env, "policy", "show", "--policy", policyFile)
	require.Equal(t, 0, r.code(), r.stderr)
	// Each rule and limit, with the file it came from.
	for _, rule := range []string{".env.example", "build", cache, "docs/legal", ".envrc", "deploy/", "GO*", "NPM_TOKEN", "CI=true",
		"memory 2147483648 bytes", "pids 256", "cpus 2", "timeoutDefault 120s", "maxOutput 1048576 bytes"} {
		re := strings.ReplaceAll(regexp.QuoteMeta(rule), " ", `\s+`)
		assert.Regexp(t, `(?m)^\s+`+re+`\s+`+regexp.QuoteMeta(policyFile), r.stdout, "policy show names the rule and its file")
	}

	script := `cat .env; cat .env.example; cat key.pem
echo b > build/b && echo build writable
echo c > ` + cache + `/c && echo cache writable
echo l > docs/legal/l
echo r >> .envrc
echo d > deploy/run.sh
echo "env $CI $GOFLAGS $NPM_TOKEN ${OTHER_TOKEN:-withheld}"
ulimit -d`
	r = runBoxshIn(t, ctx, proj, "", env, "--policy", policyFile, "--bind", "ro:"+proj, "-c", script)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "EXAMPLE=1\nbuild writable\ncache writable\nenv true -v npm-secret withheld\n2097152\n", r.stdout)
	for _, refusal := range []string{".env: Permission denied", "key.pem: Permission denied", "docs/legal/l: Read-only file system", ".envrc: Read-only file system", "deploy/run.sh: Read-only file system"} {
		assert.Contains(t, r.stderr, refusal)
	}
	assert.Equal(t, "echo deploy\n", fileText(t, filepath.Join(proj, "deploy", "run.sh")))
}

// publishExample runs docs/network.md's example of a port of a sandbox
// without network, published on the host's loopback.
func publishExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	lines := strings.Split(strings.TrimSpace(block), "\n")
	require.Len(t, lines, 2)
	// The line the doc shows, with the host's port boxsh chose.
	said := regexp.MustCompile(strings.Replace(regexp.QuoteMeta(strings.TrimPrefix(lines[1], "# ")), "40123", `(\d+)`, 1))
	srv := startLine(t, ctx, t.TempDir(), nil, lines[0])
	port := srv.wait(t, said)[1]
	body := httpGet(t, "http://127.0.0.1:"+port+"/")
	assert.Contains(t, body, "Directory listing for /", "python's web server in the sandbox answers")
}

// allowlistExample runs docs/network.md's settings file for npm and GitHub,
// loaded with --policy. The sandbox's network is then the allowlist.
func allowlistExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	home := homeDir(t)
	policyFile := filepath.Join(home, "network.json")
	require.NoError(t, os.WriteFile(policyFile, []byte(block), 0o644))
	r := runBoxshIn(t, ctx, home, "", readerEnv(home), "policy", "show", "--policy", policyFile)
	require.Equal(t, 0, r.code(), r.stderr)
	var settings struct {
		Network struct {
			Mode           string   `json:"mode"`
			AllowedDomains []string `json:"allowedDomains"`
		} `json:"network"`
	}
	require.NoError(t, json.Unmarshal([]byte(block), &settings))
	assert.Regexp(t, `(?m)^\s+`+settings.Network.Mode+`\s+`+regexp.QuoteMeta(policyFile), r.stdout, "the mode")
	for _, d := range settings.Network.AllowedDomains {
		assert.Regexp(t, `(?m)^\s+`+regexp.QuoteMeta(d)+`\s+`+regexp.QuoteMeta(policyFile), r.stdout, "an allowed domain")
	}
	// A file with network settings turns the sandbox on; a host it does
	// not name is refused by the proxy, which says how to allow it.
	r = runBoxshIn(t, ctx, home, "", readerEnv(home), "--policy", policyFile, "-c", "id -u; curl -fsS -o /dev/null http://example.com/")
	assert.NotEqual(t, 0, r.code())
	assert.Equal(t, "0\n", r.stdout)
	assert.Contains(t, r.stderr, "example.com is not allowed (run with --allow-domain example.com)")
}

// specExample runs docs/sandbox.md's example of the sandbox as an OCI spec:
// printed, written as a bundle and run by runc.
func specExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	lines := shellLines(block)
	require.Len(t, lines, 4)
	proj := filepath.Join(homeDir(t), "proj")
	writeFiles(t, proj, map[string]string{"a.txt": "a\n"})

	r := runShell(t, ctx, proj, nil, lines[0])
	require.Equal(t, 0, r.code(), r.stderr)
	var spec specs.Spec
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &spec), "config.json")
	require.NotNil(t, spec.Linux)
	assert.True(t, slices.ContainsFunc(spec.Linux.Namespaces, func(ns specs.LinuxNamespace) bool { return ns.Type == specs.NetworkNamespace }), "--new-net-ns")
	assert.True(t, slices.ContainsFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == proj && slices.Contains(m.Options, "ro") }), "the project bound read-only")

	// The copy-on-write DST is a directory of the test's instead of the
	// host's /tmp/work (see sandboxExample).
	require.Contains(t, lines[1], "/tmp/work")
	dst := filepath.Join(homeDir(t), "work")
	r = runShell(t, ctx, proj, nil, strings.ReplaceAll(lines[1], "/tmp/work", dst))
	require.Equal(t, 0, r.code(), r.stderr)
	bundle := filepath.Join(proj, "b")
	assert.FileExists(t, filepath.Join(bundle, "config.json"))
	assert.DirExists(t, filepath.Join(bundle, "rootfs"))

	// runc runs it, as runc_test.go's tests do: boxsh-init, serving calls
	// on fd 3, which writes in the view of the project at DST.
	require.Equal(t, "runc run --bundle b demo", strings.TrimSpace(strings.Split(lines[2], "#")[0]))
	runc := requireRunc(t)
	ri := runInitUnderRunc(t, ctx, runc, proj, bundle)
	require.NoError(t, ri.probe(), "boxsh-init under runc: %s", ri.stderr.String())
	assert.Equal(t, dst+"\na\n", ri.bash("pwd; cat a.txt; echo w > new.txt"))
	assert.FileExists(t, filepath.Join(dst, "new.txt"))
	assert.NoFileExists(t, filepath.Join(proj, "new.txt"))
	ri.stop()

	// A command, under boxsh-init --exec, run by runc (runSpecUnderRuncIn
	// writes the bundle with the line's arguments).
	words := shellWords(t, ctx, proj, nil, lines[3])
	require.Greater(t, len(words), 5, "%q", words)
	require.Equal(t, []string{"boxsh", "spec", "--bundle", "b", "--"}, words[:5])
	out := runSpecUnderRuncIn(t, runc, proj, bundle, nil, nil, words[5:])
	assert.True(t, strings.HasPrefix(out, "0\n"), "id -u: %s", out)
	assert.Contains(t, scanLines(out), "usr")
	var command specs.Spec
	require.NoError(t, json.Unmarshal([]byte(fileText(t, filepath.Join(bundle, "config.json"))), &command))
	assert.Equal(t, append([]string{"/.boxsh/boxsh-init", "--exec", "--"}, words[5:]...), command.Process.Args)
}
