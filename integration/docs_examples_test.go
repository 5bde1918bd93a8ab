//go:build linux

package integration

import (
	"bufio"
	"context"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/jsontest"
)

// The code blocks of docs/*.md (issue "The first hour": every example in
// the docs is executed by CI). Each block is marked, on the line above its
// fence, either <!-- example: NAME --> of docs/DOC.md, and then the subtest
// TestDocsExamples/DOC/NAME runs it as printed and checks what the doc
// says it does, or <!-- not run: REASON --> when it is nothing a reader
// runs or writes (a diagram, a program's output compared elsewhere).

var (
	exampleMarker = regexp.MustCompile(`^<!-- example: ([a-z0-9-]+) -->$`)
	notRunMarker  = regexp.MustCompile(`^<!-- not run: (.+) -->$`)
)

// docBlock is a fenced code block of a doc, with its marker.
type docBlock struct {
	// line is the line of the opening fence, from 1.
	line int
	// body is the text between the fences.
	body string
	// example is the NAME of an example marker; notRun the REASON of a
	// not-run marker.
	example, notRun string
}

// docBlocks are the fenced code blocks of the file at path (relative to
// the checkout). A block's marker is on the line above its fence, or above
// other HTML comments there (docs/cli.md's BEGIN of the --help reference).
func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	lines := strings.Split(docText(t, path), "\n")
	var blocks []docBlock
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		b := docBlock{line: i + 1}
		for j := i - 1; j >= 0 && strings.HasPrefix(lines[j], "<!--"); j-- {
			if m := exampleMarker.FindStringSubmatch(lines[j]); m != nil {
				b.example = m[1]
				break
			}
			if m := notRunMarker.FindStringSubmatch(lines[j]); m != nil {
				b.notRun = m[1]
				break
			}
		}
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		require.Less(t, end, len(lines), "%s:%d: the code block ends", path, b.line)
		b.body = strings.Join(lines[i+1:end], "\n") + "\n"
		blocks = append(blocks, b)
		i = end
	}
	return blocks
}

// docs are the examples of docs/*.md, and what their subtests share.
type docs struct {
	// blocks are the examples' blocks by the doc's name (its file without
	// .md) and the example's.
	blocks map[string]map[string]string
	// dir is a directory of TestDocsExamples's.
	dir string
	// goProg is the program of the Go examples, built once (goProgram).
	goProg struct {
		once sync.Once
		path string
		err  error
	}
}

// readDocs reads the examples of every doc, failing the test for each
// block that is not marked.
func readDocs(t *testing.T) *docs {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	d := &docs{blocks: map[string]map[string]string{}, dir: t.TempDir()}
	for _, p := range paths {
		doc := strings.TrimSuffix(filepath.Base(p), ".md")
		file := "docs/" + doc + ".md"
		d.blocks[doc] = map[string]string{}
		for _, b := range docBlocks(t, file) {
			switch {
			case b.example != "":
				_, dup := d.blocks[doc][b.example]
				assert.False(t, dup, "%s:%d: a second example %s", file, b.line, b.example)
				d.blocks[doc][b.example] = b.body
			case b.notRun == "":
				t.Errorf("%s:%d: a code block without <!-- example: NAME --> (and a subtest of TestDocsExamples that runs it) or <!-- not run: REASON --> above it", file, b.line)
			}
		}
	}
	return d
}

// docExample runs the example block of a doc, as printed, and checks what
// the doc says of it; d holds the other examples, for those that build on
// them.
type docExample func(t *testing.T, d *docs, block string)

// docExamples are the subtests of TestDocsExamples, by doc and example.
var docExamples = map[string]map[string]docExample{
	"cli":         {"shell": cliShellExample},
	"containers":  {"apparmor": appArmorExample, "ci": ciExample, "github-actions": githubActionsExample, "gitlab-ci": gitlabCIExample, "apt": aptExample},
	"development": {"recipes": recipesExample},
	"go-client":   {"module": goModuleExample, "client": goClientExample, "session": goSessionExample},
	"mcp": {
		"rpc": rpcExample, "rpc-pipe": rpcPipeExample, "claude": claudeExample, "desktop": desktopExample,
		"listen": listenExample, "listen-output": listenOutputExample, "vscode": vscodeExample, "rest": restExample,
	},
	"network":   {"publish": publishExample, "allowlist": allowlistExample},
	"policy":    {"trust": trustExample, "settings": settingsExample},
	"protocol":  {"list": listExample},
	"sandbox":   {"sandbox": sandboxExample, "spec": specExample},
	"sandboxes": {"server": manyServerExample, "manage": manageExample, "agent": agentExample, "snapshots": snapshotsExample, "go": goServerExample},
	"sessions":  {"review": reviewExample, "audit": auditExample},
}

// TestDocsExamples checks that every code block of docs/*.md is marked.
// Every example runs as printed and does what its doc says of it.
func TestDocsExamples(t *testing.T) {
	requireRootless(t)
	d := readDocs(t)
	for doc := range docExamples {
		assert.Contains(t, d.blocks, doc, "TestDocsExamples runs examples of docs/%s.md, which is gone", doc)
	}
	for _, doc := range slices.Sorted(maps.Keys(d.blocks)) {
		assert.ElementsMatch(t, slices.Collect(maps.Keys(d.blocks[doc])), slices.Collect(maps.Keys(docExamples[doc])),
			"docs/%s.md's examples are these, each run by a subtest", doc)
	}
	for _, doc := range slices.Sorted(maps.Keys(d.blocks)) {
		if len(d.blocks[doc]) == 0 {
			continue
		}
		t.Run(doc, func(t *testing.T) {
			if !slices.ContainsFunc(serialExamples, func(ex string) bool { return strings.HasPrefix(ex, doc+"/") }) {
				t.Parallel()
			}
			for _, name := range slices.Sorted(maps.Keys(d.blocks[doc])) {
				run, ok := docExamples[doc][name]
				if !ok {
					continue // failed above
				}
				t.Run(name, func(t *testing.T) {
					if !slices.Contains(serialExamples, doc+"/"+name) {
						t.Parallel()
					}
					run(t, d, d.blocks[doc][name])
				})
			}
		})
	}
}

// serialExamples are the examples (DOC/NAME) that change what the whole
// test process shares (t.Setenv, standIn): they run alone, the
// others in parallel.
var serialExamples = []string{"containers/apt"}

// readerEnv is the environment of a reader whose home is home: the state
// and settings directories are those under it, not the test user's.
func readerEnv(home string, more ...string) []string {
	return append([]string{"HOME=" + home, "XDG_STATE_HOME=", "XDG_CONFIG_HOME=", "XDG_CACHE_HOME="}, more...)
}

// shellWords are the words of command line (its comment left out) as sh
// splits and expands them, in dir with env added.
func shellWords(t *testing.T, ctx context.Context, dir string, env []string, line string) []string {
	t.Helper()
	r := runShell(t, ctx, dir, env, "set -- "+line+"\nprintf '%s\\0' \"$@\"")
	require.Equal(t, 0, r.code(), "the words of %s: %s", line, r.stderr)
	return strings.Split(strings.TrimSuffix(r.stdout, "\x00"), "\x00")
}

// lineServer is a long-running command of a doc (a server), started from
// its line with sh.
type lineServer struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
}

// startLine starts the command line with sh in dir (boxsh's bin directory
// first on PATH, env added); it is stopped with SIGTERM at the end of the
// test. sh execs the line's command, whose process it then is.
func startLine(t *testing.T, ctx context.Context, dir string, env []string, line string) *lineServer {
	t.Helper()
	cmd := exec.CommandContext(ctx, "sh", "-c", "exec "+line)
	cmd.Dir = dir
	path := "PATH=" + filepath.Dir(boxshPath()) + string(os.PathListSeparator) + os.Getenv("PATH")
	cmd.Env = append(append(os.Environ(), path), env...)
	s := &lineServer{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stderr, s.stderr
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(exitTimeout):
			t.Errorf("%s did not stop on SIGTERM", line)
			_ = cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("%s: output:\n%s", line, truncate(s.stderr.String()))
		}
	})
	return s
}

// wait waits until the output matches re and returns the match.
func (s *lineServer) wait(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	require.Eventually(t, func() bool {
		select {
		case <-s.exited:
			return true
		default:
		}
		m = re.FindStringSubmatch(s.stderr.String())
		return m != nil
	}, replyTimeout, 10*time.Millisecond)
	require.NotNil(t, m, "%s: exited, or never printed %s:\n%s", s.cmd.Args, re, s.stderr.String())
	return m
}

// listenAddr waits for the line of a boxsh --listen server that says where
// it serves, and returns the base URL.
func (s *lineServer) listenAddr(t *testing.T) string {
	t.Helper()
	return strings.TrimSuffix(s.wait(t, listenLine)[1], "/mcp")
}

// headers adds fixed headers to every request.
type headers struct {
	h    map[string]string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

// connectHTTP connects the official Go SDK to the MCP endpoint url with
// the headers of a client's configuration.
func connectHTTP(t *testing.T, ctx context.Context, url string, h map[string]string) *mcp.ClientSession {
	t.Helper()
	agent := mcp.NewClient(&mcp.Implementation{Name: "boxsh-docs-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: headers{h, jsontest.Transport{}}},
		MaxRetries: -1,
	}
	s, err := agent.Connect(ctx, tr, nil)
	require.NoError(t, err, "connect to %s", url)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// connectCommand starts the stdio MCP server argv in dir (boxsh's bin
// directory first on PATH, env added) and connects the official Go SDK to
// it; the server's stderr goes to stderr.
func connectCommand(t *testing.T, ctx context.Context, dir string, env, argv []string, stderr io.Writer) *mcp.ClientSession {
	t.Helper()
	name := argv[0]
	if name == "boxsh" {
		name = boxshPath() // as on PATH
	}
	cmd := exec.CommandContext(ctx, name, argv[1:]...)
	cmd.Dir = dir
	path := "PATH=" + filepath.Dir(boxshPath()) + string(os.PathListSeparator) + os.Getenv("PATH")
	cmd.Env = append(append(os.Environ(), path), env...)
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	agent := mcp.NewClient(&mcp.Implementation{Name: "boxsh-docs-test", Version: "1"}, nil)
	s, err := agent.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, nil)
	require.NoError(t, err, "%q serves MCP", argv)
	return s
}

// terminal is a command line run by sh on a terminal of the test's.
type terminal struct {
	t      *testing.T
	tty    *os.File
	screen *lockedBuffer
	// done is closed when the command has exited, copied when all it
	// wrote on the terminal is in screen.
	done, copied chan struct{}
	cmd          *exec.Cmd
}

// onTerminal runs line with sh in dir on a new terminal (boxsh's bin
// directory first on PATH, env added).
func onTerminal(t *testing.T, ctx context.Context, dir string, env []string, line string) *terminal {
	t.Helper()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	path := "PATH=" + filepath.Dir(boxshPath()) + string(os.PathListSeparator) + os.Getenv("PATH")
	cmd.Env = append(append(os.Environ(), path, "TERM=dumb"), env...)
	cmd.WaitDelay = 5 * time.Second
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 200, Rows: 50})
	require.NoError(t, err)
	term := &terminal{t: t, tty: tty, screen: &lockedBuffer{}, done: make(chan struct{}), copied: make(chan struct{}), cmd: cmd}
	go func() { _, _ = io.Copy(term.screen, tty); close(term.copied) }()
	go func() { _ = cmd.Wait(); close(term.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-term.done
		tty.Close()
	})
	return term
}

// waitFor waits until the terminal shows want.
func (term *terminal) waitFor(want string) {
	term.t.Helper()
	require.Eventually(term.t, func() bool { return strings.Contains(term.screen.String(), want) },
		replyTimeout, 10*time.Millisecond, "%q never appeared on the terminal:\n%s", want, term.screen.String())
}

// typeIn types text on the terminal.
func (term *terminal) typeIn(text string) {
	term.t.Helper()
	_, err := term.tty.Write([]byte(text))
	require.NoError(term.t, err)
}

// exit types exit and waits for the command to end; it returns what the
// terminal showed and the exit status.
func (term *terminal) exit() (string, int) {
	term.t.Helper()
	term.typeIn("exit\n")
	for _, c := range []chan struct{}{term.done, term.copied} {
		select {
		case <-c:
		case <-time.After(exitTimeout):
			term.t.Fatalf("the shell did not exit; the terminal:\n%s", term.screen.String())
		}
	}
	return term.screen.String(), term.cmd.ProcessState.ExitCode()
}

// fileText is the content of path, failing the test if it cannot be read.
func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// writeFiles writes files (by path relative to dir) into dir, making their
// directories.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// scanLines are the lines of s.
func scanLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
