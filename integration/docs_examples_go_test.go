//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client"
)

// The Go examples of docs/go-client.md and docs/sandboxes.md: one program,
// in a module made as docs/go-client.md says, against this checkout, with
// each example the body of a function; the test runs each.

// goFunc is the source file of a function of the program whose body is
// an example: its statements, then a return of what the test checks.
func goFunc(name, params, body, report string) string {
	var imports []string
	for _, p := range []struct{ use, path string }{
		{"context.", "context"}, {"time.", "time"},
		{"client.", "github.com/boxsh/boxsh/client"}, {"session.", "github.com/boxsh/boxsh/client/session"},
	} {
		if strings.Contains(body+params, p.use) {
			imports = append(imports, fmt.Sprintf("\t%q\n", p.path))
		}
	}
	var stmts []string
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, "import ") { // the example's own, above
			stmts = append(stmts, "\t"+l)
		}
	}
	return "package main\n\nimport (\n" + strings.Join(imports, "") + ")\n\n" +
		"func " + name + "(" + params + ") (any, error) {\n" + strings.Join(stmts, "\n") + "\n\treturn " + report + "\n}\n"
}

// goMain runs the function its first argument names, with the others,
// and prints what it returns as JSON.
const goMain = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var report any
	var err error
	switch os.Args[1] {
	case "client":
		report, err = goClient(ctx, os.Args[2])
	case "session":
		report, err = goSession(ctx, os.Args[2])
	case "server":
		report, err = goServer(ctx, os.Args[2], os.Args[3])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(report)
}
`

// goSources are the program's files: the examples as functions.
func (d *docs) goSources() (map[string]string, error) {
	session := d.blocks["go-client"]["session"]
	const agent = "... agent works through c ...\n"
	if !strings.Contains(session, agent) {
		return nil, fmt.Errorf("docs/go-client.md's session example has no line %q", agent)
	}
	server := d.blocks["sandboxes"]["go"]
	if !strings.Contains(server, `"http://127.0.0.1:8080"`) {
		return nil, fmt.Errorf("docs/sandboxes.md's Go example has no server http://127.0.0.1:8080")
	}
	return map[string]string{
		"main.go": goMain,
		"client.go": goFunc("goClient", "ctx context.Context, project string", d.blocks["go-client"]["client"],
			`map[string]any{"exit_code": r.ExitCode, "stdout": r.Stdout, "stderr": r.Stderr, "go.mod": text}, err`),
		// What the agent does: a file it writes.
		"session.go": goFunc("goSession", "ctx context.Context, project string",
			strings.Replace(session, agent, "_ = c.WriteString(ctx, project+\"/agent.txt\", \"by the agent\\n\")\n", 1),
			`map[string]any{"changes": changes, "diff": diff, "applied": res}, err`),
		// The server the test started, in place of 127.0.0.1:8080.
		"server.go": goFunc("goServer", "ctx context.Context, url, token string", strings.Replace(server, `"http://127.0.0.1:8080"`, "url", 1),
			`map[string]any{"alice": info, "run": res, "list": list, "snapshot": snap, "bob": bob, "carol": carol, "snapshots": snaps, `+
				`"new_token": tok, "stats": st, "changes": changes, "diff": diff, "applied": applied}, err`),
	}, nil
}

// goProgram builds, once, the program of the Go examples in a module that
// depends on this checkout, made by docs/go-client.md's module lines, and
// returns its path.
func (d *docs) goProgram(t *testing.T) string {
	t.Helper()
	d.goProg.once.Do(func() { d.goProg.path, d.goProg.err = d.buildGoProgram() })
	require.NoError(t, d.goProg.err, "the program of the docs' Go examples")
	return d.goProg.path
}

// buildGoProgram makes the module and builds the program (see goProgram).
func (d *docs) buildGoProgram() (string, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	app := filepath.Join(d.dir, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		return "", err
	}
	files, err := d.goSources()
	if err != nil {
		return "", err
	}
	files["go.mod"] = "module example.com/app\n\ngo 1.26\n"
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(app, name), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "BOXSH="+root, "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %q: %v\n%s", name, args, err, out)
		}
		return nil
	}
	// The doc's lines, with $BOXSH the checkout.
	if err := run("sh", "-euc", d.blocks["go-client"]["module"]); err != nil {
		return "", err
	}
	prog := filepath.Join(app, "docs-examples")
	if err := run("go", "build", "-o", prog, "."); err != nil {
		for _, name := range slices.Sorted(maps.Keys(files)) {
			err = fmt.Errorf("%w\n--- %s\n%s", err, name, files[name])
		}
		return "", err
	}
	return prog, nil
}

// runGo runs the program's function name with args, boxsh's bin
// directory first on PATH and env added, and decodes what it printed.
func runGo(t *testing.T, d *docs, env []string, report any, name string, args ...string) {
	t.Helper()
	r := runProgramIn(t, testContext(t), t.TempDir(), "", env, d.goProgram(t), append([]string{name}, args...)...)
	require.Equal(t, 0, r.code(), "%s: %s\n%s", name, r.stderr, r.stdout)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), report), r.stdout)
}

// goEnv is the environment of the examples' program: boxsh on PATH (as
// client.Start finds it), the state directory under home.
func goEnv(home string) []string {
	return readerEnv(home, "PATH="+filepath.Dir(boxshPath())+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// goModuleExample checks docs/go-client.md's module lines: they make a
// module that depends on the checkout.
func goModuleExample(t *testing.T, d *docs, _ string) {
	prog := d.goProgram(t)
	mod := fileText(t, filepath.Join(filepath.Dir(prog), "go.mod"))
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	assert.Contains(t, mod, "github.com/boxsh/boxsh v0.0.0")
	assert.Contains(t, mod, "replace github.com/boxsh/boxsh => "+root)
}

// goClientExample runs docs/go-client.md's example of the client in a
// sandbox whose network is the allowlist, on a project it may change.
func goClientExample(t *testing.T, d *docs, _ string) {
	home := homeDir(t)
	proj := filepath.Join(home, "proj")
	// go vet of a package of no imports: the sandbox's fresh build cache
	// compiles no runtime for it.
	writeFiles(t, proj, map[string]string{"go.mod": "module example.test/proj\n\ngo 1.21\n", "main.go": "package proj\n\n// Word is a word.\nconst Word = \"old\"\n"})
	var report struct {
		ExitCode int    `json:"exit_code"`
		Stderr   string `json:"stderr"`
		GoMod    string `json:"go.mod"`
	}
	runGo(t, d, goEnv(home), &report, "client", proj)
	assert.Equal(t, 0, report.ExitCode, "go vet ./...: %s", report.Stderr)
	assert.Equal(t, fileText(t, filepath.Join(proj, "go.mod")), report.GoMod, "ReadFile")
	assert.Contains(t, fileText(t, filepath.Join(proj, "main.go")), `const Word = "new"`, "Edit, in the project bound read-write")
}

// goSessionExample runs docs/go-client.md's example of a session, its
// changes reviewed and applied.
func goSessionExample(t *testing.T, d *docs, _ string) {
	home := homeDir(t)
	proj := filepath.Join(home, "proj")
	writeFiles(t, proj, map[string]string{"a.txt": "a\n"})
	var report struct {
		Changes []client.Change     `json:"changes"`
		Diff    string              `json:"diff"`
		Applied *client.ApplyResult `json:"applied"`
	}
	runGo(t, d, goEnv(home), &report, "session", proj)
	require.Len(t, report.Changes, 1)
	assert.Equal(t, "A agent.txt (0644)", report.Changes[0].String())
	assert.Contains(t, report.Diff, "+by the agent")
	require.NotNil(t, report.Applied)
	assert.Len(t, report.Applied.Applied, 1)
	assert.Equal(t, "by the agent\n", fileText(t, filepath.Join(proj, "agent.txt")), "applied")
	sessions, err := os.ReadDir(filepath.Join(home, ".local", "state", "boxsh", "sessions"))
	require.NoError(t, err)
	assert.Empty(t, sessions, "discarded")
}

// goServerExample runs docs/sandboxes.md's example of the Go client of a
// server of many sandboxes.
func goServerExample(t *testing.T, d *docs, _ string) {
	ctx := testContext(t)
	m := startDocMany(t, d, defaultMany)
	var report struct {
		Alice     client.SandboxInfo    `json:"alice"`
		Run       client.ExecResult     `json:"run"`
		List      []client.SandboxInfo  `json:"list"`
		Snapshot  client.SnapshotInfo   `json:"snapshot"`
		Bob       client.SandboxInfo    `json:"bob"`
		Carol     client.SandboxInfo    `json:"carol"`
		Snapshots []client.SnapshotInfo `json:"snapshots"`
		NewToken  string                `json:"new_token"`
		Stats     client.Stats          `json:"stats"`
		Changes   []client.Change       `json:"changes"`
		Applied   *client.ApplyResult   `json:"applied"`
	}
	runGo(t, d, goEnv(homeDir(t)), &report, "server", m.base, m.token)
	assert.NotEmpty(t, report.Alice.Token)
	assert.Equal(t, 0, report.Run.ExitCode, "go test ./... in alice: %s", report.Run.Stderr)
	assert.Contains(t, report.Run.Stdout, "example.test/ws\t[no test files]")
	require.Len(t, report.List, 1)
	assert.Equal(t, "alice", report.List[0].Name)
	assert.Equal(t, "s1", report.Snapshot.Name)
	assert.Equal(t, client.FromSnapshot("s1"), report.Bob.From)
	assert.Equal(t, "carol", report.Carol.Name)
	require.Len(t, report.Snapshots, 1)
	assert.Equal(t, "s1", report.Snapshots[0].Name)
	assert.NotEmpty(t, report.NewToken)
	assert.NotEqual(t, report.Alice.Token, report.NewToken)
	assert.Positive(t, report.Stats.Processes, "alice's processes")
	assert.Empty(t, report.Changes, "go test changed nothing in the workspace")
	require.NotNil(t, report.Applied, "the dry run's result")
	list, err := m.api.List(ctx)
	require.NoError(t, err)
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"bob", "carol"}, names, "alice deleted")
	snaps, err := m.api.Snapshots(ctx)
	require.NoError(t, err)
	assert.Empty(t, snaps, "s1 deleted")
}
