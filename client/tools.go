package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/tool"
)

// toolResult is an MCP CallToolResult as the client reads it: the
// content blocks (which repeat structuredContent as text) are decoded
// only when asked for.
type toolResult struct {
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// blocks decodes the content blocks.
func (r *toolResult) blocks() []tool.Content {
	var cs []tool.Content
	_ = json.Unmarshal(r.Content, &cs)
	return cs
}

// text is the text of the result's text blocks.
func (r *toolResult) text() string {
	var parts []string
	for _, c := range r.blocks() {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// callTool runs a tool and decodes its result; a result with isError is
// a *ToolError unless allowError.
func (c *Client) callTool(ctx context.Context, name string, args any, allowError bool) (*toolResult, error) {
	raw, err := c.call(ctx, "tools/call", struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}{name, args})
	if err != nil {
		return nil, err
	}
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, &ProtocolError{Method: "tools/call", Code: initproto.CodeInternalError, Message: fmt.Sprintf("%s: undecodable result: %v", name, err)}
	}
	if r.IsError && !allowError {
		return nil, &ToolError{Tool: name, Message: r.text()}
	}
	return &r, nil
}

// structured decodes the result's structuredContent into out.
func structured(name string, r *toolResult, out any) error {
	if len(r.StructuredContent) == 0 {
		return &ProtocolError{Method: "tools/call", Code: initproto.CodeInternalError, Message: name + ": result without structuredContent"}
	}
	if err := json.Unmarshal(r.StructuredContent, out); err != nil {
		return &ProtocolError{Method: "tools/call", Code: initproto.CodeInternalError, Message: fmt.Sprintf("%s: undecodable structuredContent: %v", name, err)}
	}
	return nil
}

// ExecRequest is a bash call.
//
// It runs Command with the shell, or Args as an argv without a shell. Args
// needs a server that supports bash "args".
type ExecRequest struct {
	// Command is a shell command line (SHELL -c Command).
	Command string
	// Args is an argv run without a shell, exclusive with Command.
	Args []string
	// Cwd is the working directory (default: the server's).
	Cwd string
	// Env holds extra environment variables.
	Env map[string]string
	// Stdin is fed to the command (default: empty input).
	Stdin string
	// Timeout kills the command's process group after it (0: the
	// policy's default, or none).
	Timeout time.Duration
}

// ExecResult is what a bash call answered.
type ExecResult struct {
	// ExitCode is the exit status: 128+N after death by signal N, -1 on
	// timeout.
	ExitCode int
	Stdout   string
	Stderr   string
	// Duration is the time the command ran, as the server measured it.
	Duration time.Duration
	// StdoutTruncated and StderrTruncated are set when a stream exceeded
	// the server's cap and was cut.
	StdoutTruncated, StderrTruncated bool
	// Signal names the signal that killed the command, if any.
	Signal string
	// TimedOut is set when the command ran past ExecRequest.Timeout, or
	// the policy's timeout, and was killed. ExitCode is then -1, and
	// Stderr holds the server's "timeout" instead of the command's.
	TimedOut bool
}

// Exec runs a command. A command that exits non-zero is a result, not an
// error; a call the server refuses (no such cwd, ...) is a *ToolError.
// Cancelling ctx kills the command and returns ctx's error at once.
func (c *Client) Exec(ctx context.Context, req ExecRequest) (*ExecResult, error) {
	if req.Command == "" && len(req.Args) == 0 {
		return nil, fmt.Errorf("boxsh: Exec: Command or Args is needed")
	}
	if req.Command != "" && len(req.Args) > 0 {
		return nil, fmt.Errorf("boxsh: Exec: Command and Args are exclusive")
	}
	args := tool.BashArgs{Command: req.Command, Args: req.Args, Cwd: c.view.in(req.Cwd), Env: req.Env, Stdin: req.Stdin}
	if req.Timeout > 0 {
		args.Timeout = req.Timeout.Seconds()
	}
	r, err := c.callTool(ctx, tool.Bash, args, true)
	if err != nil {
		return nil, err
	}
	if len(r.StructuredContent) == 0 {
		if r.IsError {
			return nil, &ToolError{Tool: tool.Bash, Message: r.text()}
		}
		return nil, structured(tool.Bash, r, nil)
	}
	var out tool.BashOutput
	if err := structured(tool.Bash, r, &out); err != nil {
		return nil, err
	}
	return &ExecResult{
		ExitCode: out.ExitCode, Stdout: out.Stdout, Stderr: out.Stderr,
		Duration:        time.Duration(out.DurationMS) * time.Millisecond,
		StdoutTruncated: out.StdoutTruncated, StderrTruncated: out.StderrTruncated,
		Signal: out.Signal,
		// The server answers a timeout with exit code -1, which no
		// process can exit with (statuses are 0 to 255).
		TimedOut: out.ExitCode == -1,
	}, nil
}

// Run is Exec of a shell command line.
func (c *Client) Run(ctx context.Context, command string) (*ExecResult, error) {
	return c.Exec(ctx, ExecRequest{Command: command})
}

// ReadRequest is a read call (an alias of tool.ReadArgs), with the
// fields:
//
//	Path   string // the file, absolute or relative to the server's directory
//	Offset int    // first line to read, 1-based (text files; 0: the first)
//	Limit  int    // most lines to read (0: 2000, and at most 50 KB)
type ReadRequest = tool.ReadArgs

// ReadResult is what read answered. Content holds a text file's lines;
// an image comes as Image (its bytes) with Encoding "image"; other binary
// files as metadata (Encoding "metadata", Size). The fields of the
// embedded tool.ReadOutput:
//
//	Content        string // the text read (text files)
//	Encoding       string // "text", "image" or "metadata"
//	MimeType       string // the detected MIME type
//	LineCount      *int   // lines returned (text)
//	Truncated      *bool  // whether more lines follow (text)
//	TotalLines     int    // lines in the file, when truncated
//	NextOffset     int    // Offset of the next page, when truncated
//	Size           *int64 // file size in bytes (binary files)
//	Width, Height  int    // size of the returned image
//	OriginalWidth  int    // size of the image file
//	OriginalHeight int
//	WasResized     *bool  // whether the image was scaled down
type ReadResult struct {
	tool.ReadOutput
	// Image is the (possibly scaled down) image, for Encoding "image".
	Image []byte
}

// Read reads a file (or a page of it).
func (c *Client) Read(ctx context.Context, req ReadRequest) (*ReadResult, error) {
	req.Path = c.view.in(req.Path)
	r, err := c.callTool(ctx, tool.Read, req, false)
	if err != nil {
		return nil, err
	}
	var out ReadResult
	if err := structured(tool.Read, r, &out.ReadOutput); err != nil {
		return nil, err
	}
	for _, b := range r.blocks() {
		if b.Type == "image" {
			if out.Image, err = base64.StdEncoding.DecodeString(b.Data); err != nil {
				return nil, &ProtocolError{Method: "tools/call", Code: initproto.CodeInternalError, Message: "read: bad image data: " + err.Error()}
			}
		}
	}
	return &out, nil
}

// ReadFile reads a whole text file, page after page.
func (c *Client) ReadFile(ctx context.Context, path string) (string, error) {
	var sb strings.Builder
	offset := 0
	for {
		r, err := c.Read(ctx, ReadRequest{Path: path, Offset: offset})
		if err != nil {
			return "", err
		}
		if r.Encoding != "text" {
			return "", &ToolError{Tool: tool.Read, Message: fmt.Sprintf("%s is not a text file (%s)", path, r.MimeType)}
		}
		sb.WriteString(r.Content)
		if r.NextOffset == 0 || r.NextOffset <= offset {
			return sb.String(), nil
		}
		if !strings.HasSuffix(r.Content, "\n") {
			sb.WriteByte('\n')
		}
		offset = r.NextOffset
	}
}

// Write creates or replaces a file with data (parents are created).
func (c *Client) Write(ctx context.Context, path string, data []byte) error {
	args := tool.WriteArgs{Path: c.view.in(path), Content: base64.StdEncoding.EncodeToString(data), Encoding: "base64"}
	_, err := c.callTool(ctx, tool.Write, args, false)
	return err
}

// WriteString creates or replaces a file with text.
func (c *Client) WriteString(ctx context.Context, path, text string) error {
	_, err := c.callTool(ctx, tool.Write, tool.WriteArgs{Path: c.view.in(path), Content: text}, false)
	return err
}

// Edit is one exact-text replacement of Client.Edit (an alias of
// tool.Edit), with the fields:
//
//	OldText string // the exact text to replace; it must occur once
//	NewText string // its replacement
type Edit = tool.Edit

// EditResult is what edit answered (an alias of tool.EditOutput), with
// the fields:
//
//	Diff             string // unified diff of the change
//	FirstChangedLine int    // first line changed, 1-based
type EditResult = tool.EditOutput

// Edit replaces text in a file: every OldText must match exactly once,
// edits must not overlap; all or nothing.
func (c *Client) Edit(ctx context.Context, path string, edits ...Edit) (*EditResult, error) {
	r, err := c.callTool(ctx, tool.EditFile, tool.EditArgs{Path: c.view.in(path), Edits: edits}, false)
	if err != nil {
		return nil, err
	}
	var out EditResult
	if err := structured(tool.EditFile, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Terminal is the state of a terminal session.
type Terminal struct {
	// ID is the session id (set by RunInTerminal).
	ID string `json:"id"`
	// Output is the rendered screen.
	Output string `json:"output"`
	// Exited tells whether the process has ended; ExitCode is then its
	// status.
	Exited   bool `json:"exited"`
	ExitCode *int `json:"exit_code"`
}

// TerminalInfo describes a session in ListTerminals.
type TerminalInfo struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	Alive   bool   `json:"alive"`
	Cols    int    `json:"cols"`
	Rows    int    `json:"rows"`
}

// RunInTerminal starts command in a PTY session (cols and rows 0: the
// server's defaults, 220×50).
func (c *Client) RunInTerminal(ctx context.Context, command string, cols, rows int) (*Terminal, error) {
	return c.terminal(ctx, tool.RunInTerminal, tool.RunInTerminalArgs{Command: command, Cols: cols, Rows: rows})
}

// SendToTerminal writes text to a session and answers the screen after up to
// 500 ms.
//
// Add "\n" to text to run a line.
func (c *Client) SendToTerminal(ctx context.Context, id, text string) (*Terminal, error) {
	return c.terminal(ctx, tool.SendToTerminal, tool.SendToTerminalArgs{ID: id, Command: text})
}

// TerminalOutput waits up to 500 ms for new output and answers the screen.
func (c *Client) TerminalOutput(ctx context.Context, id string) (*Terminal, error) {
	return c.terminal(ctx, tool.GetTerminalOutput, tool.TerminalIDArgs{ID: id})
}

// KillTerminal ends a session and answers its final screen.
func (c *Client) KillTerminal(ctx context.Context, id string) (string, error) {
	t, err := c.terminal(ctx, tool.KillTerminal, tool.TerminalIDArgs{ID: id})
	if err != nil {
		return "", err
	}
	return t.Output, nil
}

// ListTerminals lists the terminal sessions.
func (c *Client) ListTerminals(ctx context.Context) ([]TerminalInfo, error) {
	r, err := c.callTool(ctx, tool.ListTerminals, tool.NoArgs{}, false)
	if err != nil {
		return nil, err
	}
	var out struct {
		Sessions []TerminalInfo `json:"sessions"`
	}
	if err := structured(tool.ListTerminals, r, &out); err != nil {
		return nil, err
	}
	return out.Sessions, nil
}

func (c *Client) terminal(ctx context.Context, name string, args any) (*Terminal, error) {
	r, err := c.callTool(ctx, name, args, false)
	if err != nil {
		return nil, err
	}
	var t Terminal
	if err := structured(name, r, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListRequest is a list call (an alias of tool.ListArgs), with the
// fields:
//
//	Path  string // the directory, absolute or relative
//	Depth int    // levels to descend (0 and 1: the directory's own entries)
//	Limit int    // most entries (0: 1000; at most 10000)
type ListRequest = tool.ListArgs

// ListResult is what List answers, an alias of tool.ListOutput.
//
// Its fields:
//
//	Path      string           // the directory listed, absolute
//	Entries   []tool.ListEntry // depth first, in lexical order
//	Truncated bool             // whether Limit left entries out
//
// Each tool.ListEntry has these fields:
//
//   - Name, relative to Path ("sub/file" below depth 1);
//   - Error, why a directory's entries are missing;
//   - the fields of tool.FileInfo: Type ("file", "dir", "symlink", "fifo",
//     "socket", "char_device", "block_device"), Size, Mode (octal, "0644"),
//     Mtime (RFC 3339), Target (of a symbolic link) and DeniedBy (the sandbox
//     rule that refuses reading it).
type ListResult = tool.ListOutput

// List lists a directory, without following symbolic links.
func (c *Client) List(ctx context.Context, req ListRequest) (*ListResult, error) {
	req.Path = c.view.in(req.Path)
	r, err := c.callTool(ctx, tool.List, req, false)
	if err != nil {
		return nil, err
	}
	var out ListResult
	if err := structured(tool.List, r, &out); err != nil {
		return nil, err
	}
	out.Path = c.view.out(out.Path)
	return &out, nil
}

// StatResult is what stat answered (an alias of tool.StatOutput), with
// the fields:
//
//	Path     string // the path described, absolute
//	Exists   bool   // false for a missing path; the rest is then empty
//	Type     string // "file", "dir", "symlink", "fifo", "socket", ...
//	Size     *int64 // bytes (of the link itself for a symbolic link)
//	Mode     string // permission bits in octal, "0644", "4755"
//	Mtime    string // modification time, RFC 3339 with nanoseconds
//	Target   string // a symbolic link's target
//	DeniedBy string // the sandbox rule that refuses reading it, if any
type StatResult = tool.StatOutput

// Stat describes path without following a final symbolic link. A
// missing path is not an error: Exists is false. An empty path is the
// server's working directory (as ".").
func (c *Client) Stat(ctx context.Context, path string) (*StatResult, error) {
	if path == "" {
		path = "."
	}
	r, err := c.callTool(ctx, tool.Stat, tool.StatArgs{Path: c.view.in(path)}, false)
	if err != nil {
		return nil, err
	}
	var out StatResult
	if err := structured(tool.Stat, r, &out); err != nil {
		return nil, err
	}
	out.Path = c.view.out(out.Path)
	return &out, nil
}

// CallTool runs any tool with raw arguments and returns the raw
// CallToolResult; isError results are returned too, not as errors.
func (c *Client) CallTool(ctx context.Context, name string, args any) (json.RawMessage, error) {
	return c.call(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
}
