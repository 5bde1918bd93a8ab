//go:build linux

package integration

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/internal/tool"
)

// docText is the file of the checkout at path (relative to its root).
func docText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	require.NoError(t, err)
	return string(b)
}

// TestCLIReference checks that docs/cli.md's reference is boxsh --help, as
// scripts/cli-doc.sh writes it. So the manual cannot drift from the flags.
func TestCLIReference(t *testing.T) {
	t.Parallel()
	doc := docText(t, "docs/cli.md")
	_, rest, ok := strings.Cut(doc, "<!-- BEGIN boxsh --help -->\n```text\n")
	require.True(t, ok, "docs/cli.md has the reference's markers")
	ref, _, ok := strings.Cut(rest, "```\n<!-- END boxsh --help -->")
	require.True(t, ok)
	r := runBoxsh(t, testContext(t), "", "--help")
	require.Equal(t, 0, r.code())
	_, help, _ := strings.Cut(r.stdout, "\n\n") // after "boxsh version V"
	assert.Equal(t, help, ref, "docs/cli.md's reference differs from boxsh --help: run just cli-doc")
}

// examples are the code blocks of the file at path (relative to the
// checkout) that a line <!-- example: NAME --> marks, by NAME.
func examples(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	rest := docText(t, path)
	for {
		_, after, ok := strings.Cut(rest, "<!-- example: ")
		if !ok {
			return out
		}
		name, after, _ := strings.Cut(after, " -->\n")
		_, after, ok = strings.Cut(after, "\n") // the fence and its language
		require.True(t, ok, "example %s has a code block", name)
		block, after, ok := strings.Cut(after, "```")
		require.True(t, ok, "example %s's code block ends", name)
		out[name] = block
		rest = after
	}
}

// shellLines are the commands of a shell example, one a line, without
// comment lines and with continued lines joined.
func shellLines(block string) []string {
	var lines []string
	cont := ""
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") || strings.TrimSpace(l) == "" {
			continue
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cont += s + " "
			continue
		}
		lines = append(lines, cont+l)
		cont = ""
	}
	return lines
}

// runShell runs command with sh in dir, boxsh's bin directory first on
// PATH, with env added.
func runShell(t *testing.T, ctx context.Context, dir string, env []string, command string) runResult {
	t.Helper()
	path := "PATH=" + filepath.Dir(boxshPath()) + string(os.PathListSeparator) + os.Getenv("PATH")
	return runProgramIn(t, ctx, dir, "", append([]string{path}, env...), "sh", "-c", command)
}

// TestReadmeExamples checks that every example the README marks runs as
// printed and does what the README says of it.
func TestReadmeExamples(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ex := examples(t, "README.md")
	want := []string{"claude", "review", "shell", "ci", "ci-secrets", "sandboxes-server", "sandboxes-create", "go"}
	got := make([]string, 0, len(ex))
	for name := range ex {
		got = append(got, name)
	}
	require.ElementsMatch(t, want, got, "the README's examples are these, each run below")
	for _, b := range docBlocks(t, "README.md") {
		assert.True(t, b.example != "" || b.notRun != "", "README.md:%d: a code block marked neither <!-- example: NAME --> nor <!-- not run: REASON -->", b.line)
	}

	// ci-secrets is run by TestCISecrets, against stand-ins of its hosts
	// (in the stand-in internet, which a parallel test cannot start).
	t.Run("ci-secrets", func(t *testing.T) {
		assert.Contains(t, ex["ci-secrets"], "--secret GH_TOKEN=github.com")
	})

	t.Run("claude", func(t *testing.T) {
		lines := shellLines(ex["claude"])
		require.Len(t, lines, 1)
		checkClaudeAdd(t, lines[0])
	})

	t.Run("review", func(t *testing.T) {
		ctx := testContext(t)
		proj := filepath.Join(t.TempDir(), "proj")
		require.NoError(t, os.Mkdir(proj, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(proj, "main.go"), []byte("package main\n"), 0o644))
		r := runBoxshIn(t, ctx, proj, "", nil, "--try", "-c", "echo n > new.txt; echo '// x' >> main.go")
		require.Equal(t, 0, r.code(), r.stderr)
		m := regexp.MustCompile(`changes will be saved in (\S+)`).FindStringSubmatch(r.stderr)
		require.NotNil(t, m, r.stderr)
		block := strings.ReplaceAll(ex["review"], "../.boxsh-try-XXXXXX/work", m[1])
		r = runShell(t, ctx, proj, nil, "set -e\n"+block)
		require.Equal(t, 0, r.code(), "%s\n%s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "A new.txt")
		assert.Contains(t, r.stdout, "+// x")
		assert.FileExists(t, filepath.Join(proj, "new.txt"), "applied")
	})

	t.Run("shell", func(t *testing.T) {
		ctx := testContext(t)
		lines := shellLines(ex["shell"])
		require.Len(t, lines, 4)
		proj := filepath.Join(homeDir(t), "proj")
		require.NoError(t, os.MkdirAll(filepath.Join(proj, "out"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(proj, "Makefile"), []byte("all:\n\techo built > out/result\n"), 0o644))
		r := runShell(t, ctx, proj, nil, lines[0])
		require.Equal(t, 0, r.code(), r.stderr)
		assert.Contains(t, r.stdout, "uid=0(root)")
		assert.Contains(t, r.stdout, "usr\n")
		r = runShell(t, ctx, proj, nil, lines[1])
		require.Equal(t, 0, r.code(), r.stderr)
		assert.FileExists(t, filepath.Join(proj, "out", "result"), "out/ is writable")
		r = runShell(t, ctx, proj, nil, lines[2])
		require.Equal(t, 0, r.code(), r.stderr)
		assert.FileExists(t, filepath.Join(proj, "Makefile"), "$PWD never changes")
		r = runShell(t, ctx, proj, nil, lines[3])
		assert.NotEqual(t, 0, r.code(), "no network: %s", r.stdout)
	})

	t.Run("ci", func(t *testing.T) {
		t.Parallel()
		// A fresh build cache: the standard library is compiled too.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		home := homeDir(t)
		repo := filepath.Join(home, "repo")
		require.NoError(t, os.Mkdir(repo, 0o755))
		for name, body := range map[string]string{
			"go.mod":       "module example.com/ci\n\ngo 1.26\n",
			"main.go":      "package main\n\nfunc main() { println(add(1, 2)) }\n\nfunc add(a, b int) int { return a + b }\n",
			"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif add(1, 2) != 3 {\n\t\tt.Fatal(add(1, 2))\n\t}\n}\n",
		} {
			require.NoError(t, os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644))
		}
		env := []string{"HOME=" + home, "CI=true", "GITHUB_SHA=0123abc", "GITHUB_TOKEN=ghs_secret"}
		r := runShell(t, ctx, repo, env, ex["ci"])
		require.Equal(t, 0, r.code(), "%s\n%s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "ok  \texample.com/ci")
		assert.Contains(t, r.stderr, "withheld GITHUB_TOKEN")
	})

	t.Run("sandboxes", func(t *testing.T) {
		ctx := testContext(t)
		home, ws := t.TempDir(), t.TempDir()
		port := strconv.Itoa(freePort(t))
		server := shellLines(ex["sandboxes-server"])
		require.Len(t, server, 1)
		argv := strings.Fields(strings.ReplaceAll(strings.ReplaceAll(server[0], "8080", port), "~", home))
		require.Equal(t, "boxsh", argv[0])
		cmd := exec.CommandContext(ctx, boxshPath(), argv[1:]...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+t.TempDir(), "XDG_RUNTIME_DIR="+t.TempDir())
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		listening := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "boxsh: MCP on ") {
					listening <- sc.Text()
				}
			}
		}()
		select {
		case line := <-listening:
			assert.Contains(t, line, "http://127.0.0.1:"+port+"/mcp", "the line the README waits for")
		case <-ctx.Done():
			t.Fatal("the server did not say where it listens")
		}
		r := runShell(t, ctx, ws, []string{"HOME=" + home}, strings.ReplaceAll(ex["sandboxes-create"], "8080", port))
		require.Equal(t, 0, r.code(), r.stderr)
		assert.Contains(t, r.stdout, `"name":"alice"`)
		assert.Contains(t, r.stdout, `"endpoint":"/s/alice/mcp"`)
		assert.Contains(t, r.stdout, `"token":"`)
		token, err := os.ReadFile(filepath.Join(home, ".boxsh-token"))
		require.NoError(t, err)
		require.NoError(t, client.NewServer("http://127.0.0.1:"+port, strings.TrimSpace(string(token)), nil).Delete(ctx, "alice"))
	})

	t.Run("go", func(t *testing.T) {
		ctx := testContext(t)
		root, err := filepath.Abs("..")
		require.NoError(t, err)
		app := t.TempDir()
		prog := "package main\n\nimport (\n\t\"context\"\n\n\t\"github.com/boxsh/boxsh/client\"\n)\n\n" +
			"func run(ctx context.Context, project string) error {\n" + ex["go"] + "\t_ = res\n\treturn err\n}\n\n" +
			"func main() { _ = run(context.Background(), \".\") }\n"
		require.NoError(t, os.WriteFile(filepath.Join(app, "main.go"), []byte(prog), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(app, "go.mod"), []byte("module example.com/app\n\ngo 1.26\n\nrequire github.com/boxsh/boxsh v0.0.0\n\nreplace github.com/boxsh/boxsh => "+root+"\n"), 0o644))
		r := runProgramIn(t, ctx, app, "", []string{"GOFLAGS=-mod=mod"}, "go", "build", "-o", os.DevNull, ".")
		require.Equal(t, 0, r.code(), "the README's Go example builds:\n%s\n%s", prog, r.stderr)
	})
}

// checkClaudeAdd checks a `claude mcp add NAME -- COMMAND` line of a doc.
// COMMAND, started in a project, must serve MCP to the official SDK and
// leave the project untouched. Where the real Claude Code CLI is installed,
// the line must add a server that connects.
func checkClaudeAdd(t *testing.T, line string) {
	t.Helper()
	ctx := testContext(t)
	_, server, ok := strings.Cut(line, " -- ")
	require.True(t, ok, "claude mcp add NAME -- COMMAND: %s", line)
	argv := strings.Fields(server)
	require.Equal(t, "boxsh", argv[0])
	proj := t.TempDir()
	cmd := exec.CommandContext(ctx, boxshPath(), argv[1:]...)
	cmd.Dir = proj
	cmd.WaitDelay = 5 * time.Second
	agent := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "1"}, nil)
	s, err := agent.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, nil)
	require.NoError(t, err, "the server the line gives Claude Code serves MCP")
	assert.Equal(t, "ok\n", sh(t, ctx, s, "echo ok > made.txt; cat made.txt"))
	require.NoError(t, s.Close())
	assert.NoFileExists(t, filepath.Join(proj, "made.txt"), "the project is untouched")
	if _, err := exec.LookPath("claude"); err == nil {
		// The real Claude Code CLI, where it is installed.
		home := t.TempDir()
		r := runShell(t, ctx, proj, []string{"HOME=" + home}, line+" && claude mcp list")
		require.Equal(t, 0, r.code(), "%s\n%s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "boxsh: boxsh --rpc --try - ✔ Connected")
	}
}

// TestContributingChecks checks that CONTRIBUTING.md's checks are the
// project's commands. Each is checked by its tool's dry run, as
// docs/development.md's are.
func TestContributingChecks(t *testing.T) {
	t.Parallel()
	blocks := docBlocks(t, "CONTRIBUTING.md")
	ex := examples(t, "CONTRIBUTING.md")
	require.Contains(t, ex, "checks")
	for _, b := range blocks {
		assert.True(t, b.example != "" || b.notRun != "", "CONTRIBUTING.md:%d: a code block marked neither <!-- example: NAME --> nor <!-- not run: REASON -->", b.line)
	}
	recipesExample(t, nil, ex["checks"])
}

// TestToolsDocumented checks that the manual names every tool the
// registry defines: a row of docs/mcp.md's table for each tool of a
// sandbox, each tool beyond v3 in its list there, and each management tool
// in docs/sandboxes.md. So a new tool's docs are its third file.
func TestToolsDocumented(t *testing.T) {
	t.Parallel()
	mcpDoc := docText(t, "docs/mcp.md")
	for _, name := range tool.Names(tool.SandboxSet, nil) {
		assert.Regexp(t, regexp.MustCompile("(?m)^\\| `"+regexp.QuoteMeta(name)+"`"), mcpDoc, "docs/mcp.md has a row for %s", name)
	}
	beyond := regexp.MustCompile("(?m)^(`list`.*) are beyond boxsh v3").FindStringSubmatch(mcpDoc)
	require.NotNil(t, beyond, "docs/mcp.md lists the tools beyond v3")
	for _, name := range tool.Names(tool.SandboxSet, func(in *tool.Info) bool { return in.BeyondV3 }) {
		if strings.HasPrefix(name, "process_") {
			assert.Contains(t, beyond[1], "`process_*`", name)
			continue
		}
		assert.Contains(t, beyond[1], "`"+name+"`", "docs/mcp.md's list of the tools beyond v3")
	}
	sandboxesDoc := strings.Join(strings.Fields(docText(t, "docs/sandboxes.md")), " ")
	for _, name := range tool.Names(tool.ManageSet, nil) {
		assert.Contains(t, sandboxesDoc, "`"+name+"`", "docs/sandboxes.md names the management tool %s", name)
	}
}
