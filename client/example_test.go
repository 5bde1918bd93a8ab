package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/boxsh/boxsh/client"
)

// A server without a sandbox, working in a temporary directory.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	c, err := client.Start(ctx, client.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	r, err := c.Run(ctx, "echo hello from boxsh")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(r.Stdout)
	// Output: hello from boxsh
}

func ExampleClient_Exec() {
	ctx := context.Background()
	c, err := client.Start(ctx, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// An argv runs without a shell: nothing is expanded.
	r, _ := c.Exec(ctx, client.ExecRequest{Args: []string{"echo", "$HOME", "*"}})
	fmt.Print(r.Stdout)
	r, _ = c.Exec(ctx, client.ExecRequest{Command: "tr a-z A-Z; exit 3", Stdin: "shout\n", Timeout: 10 * time.Second})
	fmt.Print(r.Stdout, r.ExitCode, "\n")
	// Output:
	// $HOME *
	// SHOUT
	// 3
}

func ExampleClient_Edit() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	c, err := client.Start(ctx, client.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	path := filepath.Join(dir, "greeting.txt")
	if err := c.WriteString(ctx, path, "hello\nworld\n"); err != nil {
		log.Fatal(err)
	}
	e, err := c.Edit(ctx, path, client.Edit{OldText: "world", NewText: "boxsh"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first changed line:", e.FirstChangedLine)
	text, _ := c.ReadFile(ctx, path)
	fmt.Print(text)
	_, err = c.Edit(ctx, path, client.Edit{OldText: "absent", NewText: "x"})
	var te *client.ToolError
	fmt.Println(errors.As(err, &te))
	// Output:
	// first changed line: 2
	// hello
	// boxsh
	// true
}

func ExampleClient_List() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	c, err := client.Start(ctx, client.Options{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	l, err := c.List(ctx, client.ListRequest{Path: dir})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range l.Entries {
		fmt.Println(e.Name, e.Type)
	}
	st, _ := c.Stat(ctx, filepath.Join(dir, "missing"))
	fmt.Println("missing exists:", st.Exists)
	// Output:
	// a.txt file
	// sub dir
	// missing exists: false
}

func ExampleSupported() {
	if err := client.Supported(); err != nil {
		fmt.Println("no sandbox here:", err)
		return
	}
	// client.Start(ctx, client.Options{Sandbox: true, ...})
}

// A session's changes are what its sandbox wrote to DST. Here they are
// written by hand, as the sandbox would (Session.Start runs one).
func ExampleSession_Changes() {
	ctx := context.Background()
	src, _ := os.MkdirTemp("", "example-src-")
	base, _ := os.MkdirTemp("", "example-sessions-")
	defer os.RemoveAll(src)
	defer os.RemoveAll(base)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n"), 0o644)

	s, err := client.NewSession(ctx, client.SessionOptions{Src: src, BaseDir: base})
	if err != nil {
		log.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.Dst(), "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	os.WriteFile(filepath.Join(s.Dst(), "go.mod"), []byte("module example\n"), 0o644)

	changes, err := s.Changes()
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range changes {
		fmt.Println(c)
	}
	d, _ := s.Diff("main.go")
	fmt.Print(d)
	// Output:
	// A go.mod (0644)
	// M main.go
	// --- a/main.go
	// +++ b/main.go
	// @@ -1 +1,3 @@
	//  package main
	// +
	// +func main() {}
}

func ExampleSession_Apply() {
	ctx := context.Background()
	src, _ := os.MkdirTemp("", "example-src-")
	base, _ := os.MkdirTemp("", "example-sessions-")
	defer os.RemoveAll(src)
	defer os.RemoveAll(base)
	os.WriteFile(filepath.Join(src, "notes.txt"), []byte("v1\n"), 0o644)
	os.WriteFile(filepath.Join(src, "todo.txt"), []byte("v1\n"), 0o644)

	s, _ := client.NewSession(ctx, client.SessionOptions{Src: src, BaseDir: base})
	// The sandbox edits both files and plants a git hook.
	os.WriteFile(filepath.Join(s.Dst(), "notes.txt"), []byte("sandbox\n"), 0o644)
	os.WriteFile(filepath.Join(s.Dst(), "todo.txt"), []byte("sandbox\n"), 0o644)
	os.MkdirAll(filepath.Join(s.Dst(), ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(s.Dst(), ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
	// Meanwhile, the host edits one of them.
	os.WriteFile(filepath.Join(src, "todo.txt"), []byte("host\n"), 0o644)

	res, err := s.Apply(client.ApplyOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range res.Applied {
		fmt.Println("applied", c)
	}
	for _, r := range res.Conflicts {
		fmt.Println("conflict", r.Change.Path+":", r.Reason)
	}
	for _, r := range res.Skipped {
		fmt.Println("skipped", r.Change.Path)
	}
	b, _ := os.ReadFile(filepath.Join(src, "todo.txt"))
	fmt.Print("todo.txt: ", string(b))
	s.Discard()
	// Output:
	// applied M notes.txt
	// conflict todo.txt: changed in SRC since the session started
	// skipped .git
	// skipped .git/hooks
	// skipped .git/hooks/pre-commit
	// todo.txt: host
}

func ExampleRecoverSessions() {
	base, _ := os.MkdirTemp("", "example-sessions-")
	defer os.RemoveAll(base)
	// Sessions whose owner died (kill -9, a crash) keep their changes.
	sessions, err := client.RecoverSessions(base)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range sessions {
		fmt.Println("recovering", s.Dst(), "of", s.Src())
		if _, err := s.Apply(client.ApplyOptions{}); err == nil {
			s.Discard()
		}
	}
	fmt.Println(len(sessions), "sessions recovered")
	// Output: 0 sessions recovered
}
