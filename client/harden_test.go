package client

import (
	"errors"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
)

// Start-up mistakes are *StartError, not *ServerGoneError, with the
// one-line reason: those the client finds before running the server, and
// those the server refuses.
func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	// A boxsh with no boxsh-init beside it, on PATH or in BOXSH_INIT.
	lone := filepath.Join(t.TempDir(), "boxsh")
	b, err := os.ReadFile(boxshBin())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(lone, b, 0o755))
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"missing bind source", Options{Sandbox: true, Binds: []Bind{{Mode: ReadOnly, Src: missing}}}, "no such file or directory"},
		{"unknown bind mode", Options{Sandbox: true, Binds: []Bind{{Mode: "rw", Src: dir}}}, `unknown mode "rw"`},
		{"cow without Dst", Options{Sandbox: true, Binds: []Bind{{Mode: CopyOnWrite, Src: dir}}}, "needs Dst"},
		{"bad network mode", Options{Network: "none"}, `network "none"`},
		{"server refuses a bind", Options{Sandbox: true, Binds: []Bind{{Mode: CopyOnWrite, Src: dir, Dst: filepath.Join(dir, "in")}}}, "must not contain one another"},
		{"missing boxsh-init", Options{Binary: lone, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir}}, "cannot find boxsh-init"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			if opts.Binary == "" {
				opts.Binary = boxshBin()
			}
			opts.Dir = dir
			c, err := Start(testCtx(t), opts)
			if c != nil {
				c.Close()
			}
			var se *StartError
			require.ErrorAs(t, err, &se)
			require.Contains(t, se.Message, tc.want)
			require.NotContains(t, se.Message, "\n", "one line")
			require.Contains(t, err.Error(), tc.want)
			var gone *ServerGoneError
			require.False(t, errors.As(err, &gone), "not a crash: %v", err)
			require.False(t, errors.Is(err, ErrServerGone))
		})
	}
}

// Stat("") is the server's working directory.
func TestStatEmptyPath(t *testing.T) {
	c, dir := startPlain(t, Options{})
	st, err := c.Stat(testCtx(t), "")
	require.NoError(t, err)
	require.True(t, st.Exists)
	require.Equal(t, tool.FileTypeDir, st.Type)
	require.Equal(t, dir, st.Path)
}

// A command killed by its timeout says so in TimedOut.
func TestExecTimedOut(t *testing.T) {
	c, _ := startPlain(t, Options{})
	ctx := testCtx(t)
	r, err := c.Exec(ctx, ExecRequest{Command: "sleep 5", Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, r.TimedOut)
	require.Equal(t, -1, r.ExitCode)
	r, err = c.Exec(ctx, ExecRequest{Command: "kill -9 $$", Timeout: 5 * time.Second})
	require.NoError(t, err)
	require.False(t, r.TimedOut, "killed, not timed out")
	require.Equal(t, 137, r.ExitCode)
	r, err = c.Exec(ctx, ExecRequest{Command: "exit 255"})
	require.NoError(t, err)
	require.False(t, r.TimedOut)
}

// The doc comment of each alias of a tool type, which go doc shows
// without the fields, names every field.
func TestAliasDocsNameFields(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/boxsh/boxsh/client")
	require.NoError(t, err)
	docs := map[string]string{}
	for _, ty := range p.Types {
		docs[ty.Name] = ty.Doc
	}
	for name, v := range map[string]any{
		"ReadRequest": ReadRequest{}, "ReadResult": tool.ReadOutput{}, "Edit": Edit{}, "EditResult": EditResult{},
		"ListRequest": ListRequest{}, "ListResult": ListResult{}, "StatResult": StatResult{},
	} {
		ty := reflect.TypeOf(v)
		for i := range ty.NumField() {
			f := ty.Field(i).Name
			require.Regexp(t, `\b`+f+`\b`, docs[name], "%s's doc names %s", name, f)
		}
	}
}

// A session's Client translates the project's host paths to the
// sandbox's view of it, and back.
func TestPathView(t *testing.T) {
	v := &pathView{src: "/home/u/proj", dst: "/state/s1/dst"}
	for in, want := range map[string]string{
		"/home/u/proj":         "/state/s1/dst",
		"/home/u/proj/a/b":     "/state/s1/dst/a/b",
		"/home/u/proj/../x":    "/home/u/proj/../x",
		"/home/u/project/a":    "/home/u/project/a",
		"/home/u/proj/./a//b/": "/state/s1/dst/a/b",
		"rel/a":                "rel/a",
		"":                     "",
		"/state/s1/dst/a":      "/state/s1/dst/a",
	} {
		require.Equal(t, want, v.in(in), in)
	}
	require.Equal(t, "/home/u/proj/a", v.out("/state/s1/dst/a"))
	require.Equal(t, "/home/u/proj", v.out("/state/s1/dst"))
	require.Equal(t, "/state/s1/dstx", v.out("/state/s1/dstx"))
	var none *pathView
	require.Equal(t, "/home/u/proj/a", none.in("/home/u/proj/a"))
}
