//go:build linux

package integration

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/internal/tool"
)

// The examples of docs/mcp.md, docs/protocol.md and docs/sandboxes.md:
// servers, the clients' configurations and the HTTP calls to them.

var synopsisPart = regexp.MustCompile(`\[([^\]]+)\]`)

// synopsis makes a usage line of a doc (on one line or more) a command
// line: each [PART] is replaced by its value in parts, "" leaving it out.
// parts names every part: one the test does not know fails it.
func synopsis(t *testing.T, block string, parts map[string]string) string {
	t.Helper()
	var unknown []string
	line := synopsisPart.ReplaceAllStringFunc(strings.Join(strings.Fields(block), " "), func(m string) string {
		v, ok := parts[m[1:len(m)-1]]
		if !ok {
			unknown = append(unknown, m)
		}
		return v
	})
	require.Empty(t, unknown, "parts of the synopsis %s the test does not know", block)
	return strings.Join(strings.Fields(line), " ")
}

// kernelPort returns line with its listening port 8080 replaced by 0. The
// kernel then picks a free port, which the server prints. The clients get
// 127.0.0.1:8080 replaced by where the server listens (see onPort). A port
// found free beforehand might be taken meanwhile.
func kernelPort(t *testing.T, line string) string {
	t.Helper()
	require.Contains(t, line, "--listen 8080")
	return strings.Replace(line, "--listen 8080", "--listen 0", 1)
}

// onPort is text with the doc's server, http://127.0.0.1:8080, replaced by
// base.
func onPort(t *testing.T, text, base string) string {
	t.Helper()
	require.Contains(t, text, "http://127.0.0.1:8080")
	return strings.ReplaceAll(text, "http://127.0.0.1:8080", base)
}

// jsonValues are the JSON values of out, one after another (curl -s
// prints no newline after a body).
func jsonValues(t *testing.T, out string) []map[string]any {
	t.Helper()
	var values []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var v map[string]any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return values
		}
		require.NoError(t, err, "JSON values: %s", out)
		values = append(values, v)
	}
}

// commentKeys are the member names a comment's sample of JSON shows.
func commentKeys(comment string) []string {
	var keys []string
	for _, m := range regexp.MustCompile(`"([a-z_]+)":`).FindAllStringSubmatch(comment, -1) {
		keys = append(keys, m[1])
	}
	return keys
}

// shellCommand is a command of a shell block (its continued lines
// joined) and the comment lines after it.
type shellCommand struct {
	line     string
	comments string
}

// shellCommands are the commands of a shell block, each with the comment
// lines that follow it.
func shellCommands(block string) []shellCommand {
	var cmds []shellCommand
	cont := false
	for _, l := range strings.Split(block, "\n") {
		switch trimmed := strings.TrimSpace(l); {
		case trimmed == "":
		case strings.HasPrefix(trimmed, "#") && !cont && len(cmds) > 0:
			cmds[len(cmds)-1].comments += trimmed + "\n"
		case cont:
			cmds[len(cmds)-1].line += " " + strings.TrimSuffix(trimmed, "\\")
		default:
			cmds = append(cmds, shellCommand{line: strings.TrimSuffix(l, "\\")})
		}
		cont = strings.HasSuffix(l, "\\")
	}
	return cmds
}

// rpcExample runs docs/mcp.md's example of the stdio server with its
// options.
func rpcExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	line := synopsis(t, block, map[string]string{"--workers N": "--workers 1", "--shell PATH": "--shell /bin/bash"})
	dir := t.TempDir()
	s := connectCommand(t, ctx, dir, nil, shellWords(t, ctx, dir, nil, line), io.Discard)
	assert.NotEqual(t, "\n", sh(t, ctx, s, "echo $BASH_VERSION"), "the commands run in the --shell")
	require.NoError(t, s.Close())
}

// rpcPipeExample runs docs/mcp.md's example of a session on the stdio
// server, piped in.
func rpcPipeExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	r := runShell(t, ctx, t.TempDir(), nil, block)
	require.Equal(t, 0, r.code(), r.stderr)
	lines := scanLines(r.stdout)
	require.Len(t, lines, 2, "an answer to each request, none to the notification: %s", r.stdout)
	var init struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
			ServerInfo      struct{ Name string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &init))
	assert.Equal(t, 1, init.ID)
	assert.NotEmpty(t, init.Result.ProtocolVersion)
	assert.Equal(t, "boxsh", init.Result.ServerInfo.Name)
	var call struct {
		ID     int `json:"id"`
		Result struct {
			StructuredContent tool.BashOutput `json:"structuredContent"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &call))
	assert.Equal(t, 2, call.ID)
	assert.Equal(t, "hello\n", call.Result.StructuredContent.Stdout)
}

// claudeExample runs docs/mcp.md's example of Claude Code's configuration,
// the same as the README's.
func claudeExample(t *testing.T, _ *docs, block string) {
	lines := shellLines(block)
	require.Len(t, lines, 1)
	checkClaudeAdd(t, lines[0])
}

// desktopExample runs docs/mcp.md's stdio configuration of VS Code, Claude
// Desktop and Cursor. It starts the server as they start it, in a directory
// of their own.
func desktopExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	var config struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(block), &config))
	server, ok := config.MCPServers["boxsh"]
	require.True(t, ok, block)
	proj := filepath.Join(homeDir(t), "proj")
	writeFiles(t, proj, map[string]string{"a.txt": "a\n"})
	require.Contains(t, strings.Join(server.Args, " "), "/path/to/project")
	argv := []string{server.Command}
	for _, a := range server.Args {
		argv = append(argv, strings.ReplaceAll(a, "/path/to/project", proj))
	}
	var stderr lockedBuffer
	s := connectCommand(t, ctx, t.TempDir(), nil, argv, &stderr)
	assert.Equal(t, "a\n"+proj+"\n", sh(t, ctx, s, "cat a.txt; echo x > made.txt; pwd"), "the project, at its path")
	require.NoError(t, s.Close())
	assert.NoFileExists(t, filepath.Join(proj, "made.txt"), "the changes are a session")
	assert.Regexp(t, `changes will be saved in \S+`, stderr.String())
}

// listenExample runs docs/mcp.md's synopsis of the HTTP server, with a
// token file and a sandbox, and without authentication.
func listenExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	home := homeDir(t)
	env := readerEnv(home)
	tokenFile := filepath.Join(home, "token")
	line := synopsis(t, block, map[string]string{"ADDR": "", "--token-file PATH | --no-auth": "--token-file " + tokenFile, "SANDBOX OPTIONS": "--sandbox"})
	base := startLine(t, ctx, t.TempDir(), env, line).listenAddr(t)
	assert.Regexp(t, `^http://127\.0\.0\.1:[1-9]\d*$`, base, "a free port of the loopback by default")
	fi, err := os.Stat(tokenFile)
	require.NoError(t, err, "the token file is made")
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "every request needs the token")
	s := connectHTTP(t, ctx, base+"/mcp", map[string]string{"Authorization": "Bearer " + strings.TrimSpace(fileText(t, tokenFile))})
	assert.Equal(t, "0\n", sh(t, ctx, s, "id -u"), "the tools run in the sandbox")

	// A port alone is one of the loopback (0: the kernel's choice).
	line = synopsis(t, block, map[string]string{"ADDR": "0", "--token-file PATH | --no-auth": "--no-auth", "SANDBOX OPTIONS": ""})
	base = startLine(t, ctx, t.TempDir(), env, line).listenAddr(t)
	assert.Regexp(t, `^http://127\.0\.0\.1:[1-9]\d*$`, base)
	s = connectHTTP(t, ctx, base+"/mcp", nil)
	assert.Equal(t, "ok\n", sh(t, ctx, s, "echo ok"), "--no-auth: no token")
}

// listenOutputExample checks docs/mcp.md's example of what the HTTP server
// prints at its start, with its own token in the state directory.
func listenOutputExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	home := homeDir(t)
	srv := startLine(t, ctx, t.TempDir(), readerEnv(home), "boxsh --rpc --listen")
	base := srv.listenAddr(t)
	for _, s := range []string{"/home/me", "4242", "http://127.0.0.1:38611"} {
		require.Contains(t, block, s)
	}
	want := strings.NewReplacer("/home/me", home, "4242", strconv.Itoa(srv.cmd.Process.Pid), "http://127.0.0.1:38611", base).Replace(block)
	lines := scanLines(srv.stderr.String())
	require.GreaterOrEqual(t, len(lines), 2, srv.stderr.String())
	assert.Equal(t, want, lines[0]+"\n"+lines[1]+"\n")
	token := fileText(t, filepath.Join(home, ".local", "state", "boxsh", "http-"+strconv.Itoa(srv.cmd.Process.Pid)+".token"))
	s := connectHTTP(t, ctx, base+"/mcp", map[string]string{"Authorization": "Bearer " + strings.TrimSpace(token)})
	assert.Equal(t, "ok\n", sh(t, ctx, s, "echo ok"), "the token of the file named")
}

// mcpServerLine is the server docs/mcp.md gives its HTTP clients.
func mcpServerLine(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile("for a server started as\\s+`([^`]+)`").FindStringSubmatch(docText(t, "docs/mcp.md"))
	require.NotNil(t, m, "docs/mcp.md says how the HTTP clients' server is started")
	return m[1]
}

// vscodeExample runs docs/mcp.md's VS Code configuration of the HTTP
// server, and Cursor's, given in the text. It runs it against the server
// the doc starts for it in a project.
func vscodeExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	var config struct {
		Servers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"servers"`
		Inputs []struct {
			ID          string `json:"id"`
			Type        string `json:"type"`
			Password    bool   `json:"password"`
			Description string `json:"description"`
		} `json:"inputs"`
	}
	require.NoError(t, json.Unmarshal([]byte(block), &config))
	server := config.Servers["boxsh"]
	assert.Equal(t, "http", server.Type)
	require.Len(t, config.Inputs, 1)
	input := config.Inputs[0]
	assert.Equal(t, "promptString", input.Type)
	assert.True(t, input.Password)

	home := homeDir(t)
	proj := filepath.Join(home, "proj")
	require.NoError(t, os.Mkdir(proj, 0o755))
	env := readerEnv(home)
	base := startLine(t, ctx, proj, env, kernelPort(t, mcpServerLine(t))).listenAddr(t)
	// The token, read as the input's description says.
	cat := regexp.MustCompile(`\((cat [^)]+)\)`).FindStringSubmatch(input.Description)
	require.NotNil(t, cat, input.Description)
	r := runShell(t, ctx, proj, env, cat[1])
	require.Equal(t, 0, r.code(), r.stderr)
	token := strings.TrimSpace(r.stdout)
	h := map[string]string{}
	for k, v := range server.Headers {
		h[k] = strings.ReplaceAll(v, "${input:"+input.ID+"}", token)
	}
	s := connectHTTP(t, ctx, onPort(t, server.URL, base), h)
	assert.Equal(t, "0\n", sh(t, ctx, s, "echo made > made.txt; id -u"), "sandboxed")
	assert.Equal(t, "made\n", fileText(t, filepath.Join(proj, "made.txt")), "--bind wr:$PWD: the project is writable")

	m := regexp.MustCompile("takes `url` and `headers` directly:\\s+`([^`]+)`").FindStringSubmatch(docText(t, "docs/mcp.md"))
	require.NotNil(t, m, "docs/mcp.md gives Cursor's configuration")
	var cursor struct {
		MCPServers map[string]struct {
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(m[1]), &cursor), m[1])
	c := cursor.MCPServers["boxsh"]
	for k, v := range c.Headers {
		c.Headers[k] = strings.ReplaceAll(v, "TOKEN", token)
	}
	s = connectHTTP(t, ctx, onPort(t, c.URL, base), c.Headers)
	assert.Equal(t, "made\n", sh(t, ctx, s, "cat made.txt"), "Cursor's configuration reaches the same server")
}

// restExample runs docs/mcp.md's example of the REST twin with curl, in a
// Go module. It runs on the server of the clients' configuration.
func restExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	home := homeDir(t)
	proj := filepath.Join(home, "proj")
	// A library of no standard package: its test needs no runtime
	// compiled in the sandbox's fresh build cache.
	writeFiles(t, proj, map[string]string{"go.mod": "module example.test/rest\n\ngo 1.21\n", "lib.go": "package rest\n\n// Two is 2.\nconst Two = 2\n"})
	env := readerEnv(home)
	base := startLine(t, ctx, proj, env, kernelPort(t, mcpServerLine(t))).listenAddr(t)
	r := runShell(t, ctx, proj, env, onPort(t, block, base))
	require.Equal(t, 0, r.code(), r.stderr)
	exit, rest, _ := strings.Cut(r.stdout, "\n")
	assert.Equal(t, "0", exit, "go test's exit code, by jq")
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal([]byte(rest), &doc), rest)
	assert.True(t, strings.HasPrefix(doc.OpenAPI, "3.1"), doc.OpenAPI)
	assert.Contains(t, doc.Paths, "/v1/tools/bash")
}

// listing is a list result, its entries as JSON objects.
type listing struct {
	Path      string           `json:"path"`
	Truncated bool             `json:"truncated"`
	Entries   []map[string]any `json:"entries"`
}

// listExample checks docs/protocol.md's example of the list request and its
// answer. It lists, in the sandbox, a directory of the files the answer
// shows.
func listExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	m := regexp.MustCompile("\\*\\*list\\*\\* `(\\{[^`]*\\})` →").FindStringSubmatch(docText(t, "docs/protocol.md"))
	require.NotNil(t, m, "docs/protocol.md gives the list request before its answer")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "hello world\n", "sub/b": "", ".env": "SECRET=1\n"})
	require.NoError(t, os.Chmod(filepath.Join(dir, "a.txt"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "sub", "b"), 0o600))
	require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "link")))
	var args map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.Replace(m[1], "DIR", strconv.Quote(dir), 1)), &args), m[1])

	s := startServer(t, ctx, serverOptions{dir: dir, args: []string{"--sandbox", "--bind", "ro:" + dir}})
	res := s.call("list", args).toolResult(t)
	require.False(t, res.IsError, res.text())
	var got, want listing
	require.NoError(t, json.Unmarshal(res.StructuredContent, &got))
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(block, "/abs/DIR", dir)), &want))
	assert.Equal(t, want.Path, got.Path)
	assert.Equal(t, want.Truncated, got.Truncated)
	names := func(l listing) []string {
		var n []string
		for _, e := range l.Entries {
			n = append(n, e["name"].(string))
		}
		return n
	}
	require.Equal(t, names(want), names(got), "the entries, in the order listed")
	for i, w := range want.Entries {
		g := got.Entries[i]
		assert.ElementsMatch(t, slices.Collect(maps.Keys(w)), slices.Collect(maps.Keys(g)), "the members of %s", w["name"])
		_, err := time.Parse(time.RFC3339Nano, g["mtime"].(string))
		assert.NoError(t, err, "mtime")
		for k, v := range w {
			if k == "mtime" || (k == "size" && w["type"] == "dir") {
				continue // the file system's
			}
			assert.Equal(t, v, g[k], "%s of %s", k, w["name"])
		}
	}
}

// docMany is a server of many sandboxes from docs/sandboxes.md's synopsis,
// serving a workspace.
type docMany struct {
	base, token string
	// ws is the workspace (seed.txt and a Go module), state the server's
	// XDG_STATE_HOME.
	ws, state string
	api       *client.Server
}

// defaultMany are the synopsis's parts for a server with the defaults.
var defaultMany = map[string]string{"ADDR": "0", "--max-sandboxes N": "", "--sandbox-idle D": "", "--sandbox-requests N": "", "--sandbox-forwards N": "", "SANDBOX OPTIONS": ""}

// startDocMany starts the server of the synopsis with parts.
func startDocMany(t *testing.T, d *docs, parts map[string]string) *docMany {
	t.Helper()
	home := homeDir(t)
	m := &docMany{ws: filepath.Join(home, "ws"), state: filepath.Join(home, "state")}
	writeFiles(t, m.ws, map[string]string{"seed.txt": "seed\n", "go.mod": "module example.test/ws\n\ngo 1.21\n", "lib.go": "package ws\n\n// Two is 2.\nconst Two = 2\n"})
	line := synopsis(t, d.blocks["sandboxes"]["server"], parts)
	srv := startLine(t, testContext(t), m.ws, readerEnv(home, "XDG_STATE_HOME="+m.state, "XDG_RUNTIME_DIR="+t.TempDir()), line)
	m.base = srv.listenAddr(t)
	m.token = strings.TrimSpace(fileText(t, srv.wait(t, regexp.MustCompile(`bearer token in (\S+)`))[1]))
	m.api = client.NewServer(m.base, m.token, nil)
	return m
}

// sandboxRun runs command in a sandbox of m with its token and returns
// its stdout.
func (m *docMany) sandboxRun(t *testing.T, name, token, command string) string {
	t.Helper()
	res, err := m.api.Sandbox(name, token).Run(testContext(t), command)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s in %s: %s", command, name, res.Stderr)
	return res.Stdout
}

// manyServerExample runs docs/sandboxes.md's synopsis of the server, with
// limits.
func manyServerExample(t *testing.T, d *docs, _ string) {
	ctx := testContext(t)
	m := startDocMany(t, d, map[string]string{"ADDR": "127.0.0.1:0", "--max-sandboxes N": "--max-sandboxes 1", "--sandbox-idle D": "--sandbox-idle 0",
		"--sandbox-requests N": "--sandbox-requests 4", "--sandbox-forwards N": "--sandbox-forwards 1", "SANDBOX OPTIONS": "--network disabled"})
	a, err := m.api.Create(ctx, "a", client.FromWorkspace)
	require.NoError(t, err)
	_, err = m.api.Create(ctx, "b", client.FromEmpty)
	var refused *client.HTTPError
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, http.StatusTooManyRequests, refused.StatusCode)
	assert.Contains(t, refused.Detail, "(--max-sandboxes 1)")
	c := m.api.Sandbox("a", a.Token)
	_, err = c.Expose(ctx, 8000, 0)
	require.NoError(t, err)
	_, err = c.Expose(ctx, 8001, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--sandbox-forwards 1")
	assert.Equal(t, "seed\n", m.sandboxRun(t, "a", a.Token, "cat seed.txt"), "the workspace's view")
	res, err := c.Run(ctx, "curl -sS -m 5 http://example.com/")
	require.NoError(t, err)
	assert.NotEqual(t, 0, res.ExitCode, "--network disabled: %s", res.Stdout)
}

// manageExample runs docs/sandboxes.md's example of the management API with
// curl.
func manageExample(t *testing.T, d *docs, block string) {
	ctx := testContext(t)
	m := startDocMany(t, d, defaultMany)
	cmds := shellCommands(block)
	require.Len(t, cmds, 4)
	// The server's token, in place of the doc's "...".
	require.True(t, strings.HasPrefix(cmds[0].line, "TOKEN=..."), cmds[0].line)
	r := runShell(t, ctx, m.ws, nil, onPort(t, strings.Replace(block, "TOKEN=...", "TOKEN="+m.token, 1), m.base))
	require.Equal(t, 0, r.code(), r.stderr)
	values := jsonValues(t, r.stdout)
	require.GreaterOrEqual(t, len(values), 2, r.stdout)
	created, listed := values[0], values[1]
	for _, k := range commentKeys(cmds[1].comments) {
		assert.Contains(t, created, k, "the create's answer has the doc's members")
	}
	assert.Equal(t, "alice", created["name"])
	assert.Equal(t, "/s/alice/mcp", created["endpoint"])
	assert.NotEmpty(t, created["token"])
	// Its files: a session in the server's state directory.
	require.Contains(t, cmds[1].comments, `"/home/me/.local/state/boxsh/sessions/…/dst"`)
	assert.Regexp(t, "^"+regexp.QuoteMeta(m.state+"/boxsh/sessions/")+`[^/]+/dst$`, created["workspace"])
	sandboxes, ok := listed["sandboxes"].([]any)
	require.True(t, ok, "%v", listed)
	require.Len(t, sandboxes, 1)
	for _, k := range commentKeys(strings.Replace(cmds[2].comments, `{"sandboxes":[`, "", 1)) {
		assert.Contains(t, sandboxes[0], k, "the list's entries have the doc's members")
	}
	assert.Contains(t, listed, "sandboxes")
	list, err := m.api.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, list, "deleted")
}

// agentExample runs docs/sandboxes.md's example of an agent's configuration
// for its sandbox, with the sandbox's token.
func agentExample(t *testing.T, d *docs, block string) {
	ctx := testContext(t)
	m := startDocMany(t, d, defaultMany)
	alice, err := m.api.Create(ctx, "alice", client.FromWorkspace)
	require.NoError(t, err)
	var config struct {
		Servers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"servers"`
	}
	require.NoError(t, json.Unmarshal([]byte(block), &config))
	server := config.Servers["alice"]
	assert.Equal(t, "http", server.Type)
	require.Contains(t, server.Headers["Authorization"], "9f3c…")
	s := connectHTTP(t, ctx, onPort(t, server.URL, m.base), map[string]string{"Authorization": strings.Replace(server.Headers["Authorization"], "9f3c…", alice.Token, 1)})
	assert.Equal(t, "seed\n", sh(t, ctx, s, "cat seed.txt"))
	// The sandbox's token is not the server's.
	_, err = client.NewServer(m.base, alice.Token, nil).List(ctx)
	var refused *client.HTTPError
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, http.StatusUnauthorized, refused.StatusCode)
}

// snapshotsExample runs docs/sandboxes.md's example of snapshots with curl:
// a snapshot, a sandbox from one, a fork and a restore. Each step is
// checked by the files of the sandboxes.
func snapshotsExample(t *testing.T, d *docs, block string) {
	ctx := testContext(t)
	m := startDocMany(t, d, defaultMany)
	alice, err := m.api.Create(ctx, "alice", client.FromWorkspace)
	require.NoError(t, err)
	m.sandboxRun(t, "alice", alice.Token, "echo before > state.txt")
	cmds := shellCommands(block)
	require.Len(t, cmds, 6)
	run := func(i int) map[string]any {
		t.Helper()
		r := runShell(t, ctx, m.ws, []string{"TOKEN=" + m.token}, onPort(t, cmds[i].line, m.base))
		require.Equal(t, 0, r.code(), r.stderr)
		if strings.TrimSpace(r.stdout) == "" {
			return nil
		}
		v := jsonValues(t, r.stdout)
		require.Len(t, v, 1, r.stdout)
		return v[0]
	}
	snap := run(0)
	assert.Equal(t, "before-refactor", snap["name"])
	for _, k := range commentKeys(comment(cmds[0].line)) {
		assert.Contains(t, snap, k, "the snapshot's answer has the doc's members")
	}
	m.sandboxRun(t, "alice", alice.Token, "echo after > state.txt")
	bob := run(1)
	assert.Equal(t, "before\n", m.sandboxRun(t, "bob", bob["token"].(string), "cat state.txt"), "bob has the snapshot's files")
	carol := run(2)
	require.NotEmpty(t, carol["token"], "carol's token")
	assert.Equal(t, "after\n", m.sandboxRun(t, "carol", carol["token"].(string), "cat state.txt"), "carol has alice's files as they are")
	run(3)
	assert.Equal(t, "before\n", m.sandboxRun(t, "alice", alice.Token, "cat state.txt"), "alice is restored, with her token")
	snaps := run(4)
	assert.Contains(t, mustJSON(t, snaps), `"name":"before-refactor"`)
	run(5)
	left, err := m.api.Snapshots(ctx)
	require.NoError(t, err)
	assert.Empty(t, left, "deleted")
}
