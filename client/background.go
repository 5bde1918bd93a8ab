package client

import (
	"context"
	"fmt"
	"time"

	"github.com/boxsh/boxsh/internal/tool"
)

// Background is a command started in the background (a bash call with
// background set; the server must support it).
type Background struct {
	// ID names it in the process calls; PID is its process id, as the
	// sandbox numbers it.
	ID  string
	PID int
}

// ProcessOutput is what ProcessOutput answers, an alias of
// tool.ProcessOutputResult.
//
// It holds the output from the offset asked for on, by stream, and the
// process's state:
//
//	ID         string
//	Stdout     string // standard output from the offset on
//	Stderr     string // standard error from the offset on
//	NextOffset int64  // the offset to read on from
//	Dropped    int64  // bytes from the offset on no longer kept (the last 1 MiB is)
//	State      string // "running" or "exited" (tool.ProcessRunning, tool.ProcessExited)
//	ExitCode   *int   // once exited: the code, or 128+N after signal N
//	Signal     string // the signal that killed it, if any ("TERM")
type ProcessOutput = tool.ProcessOutputResult

// ProcessInfo describes a background process (an alias of
// tool.ProcessInfo):
//
//	ID          string
//	PID         int    // as the sandbox numbers it
//	Command     string // the command, or the argv joined by spaces
//	Started     string // RFC 3339
//	OutputBytes int64  // output written so far, both streams
//	Dropped     int64  // output no longer kept
//	State, ExitCode, Signal as in ProcessOutput
type ProcessInfo = tool.ProcessInfo

// StartBackground starts req's command in the background and returns at
// once. Its Timeout, if any, kills it; no default timeout applies.
func (c *Client) StartBackground(ctx context.Context, req ExecRequest) (*Background, error) {
	if (req.Command == "") == (len(req.Args) == 0) {
		return nil, fmt.Errorf("boxsh: StartBackground: give one of Command and Args")
	}
	args := tool.BashArgs{Command: req.Command, Args: req.Args, Cwd: req.Cwd, Env: req.Env, Stdin: req.Stdin, Background: true}
	if req.Timeout > 0 {
		args.Timeout = req.Timeout.Seconds()
	}
	r, err := c.callTool(ctx, tool.Bash, args, false)
	if err != nil {
		return nil, err
	}
	var out tool.BashOutput
	if err := structured(tool.Bash, r, &out); err != nil {
		return nil, err
	}
	if out.ID == "" {
		return nil, fmt.Errorf("boxsh: StartBackground: the server ran the command in the foreground (it does not support background)")
	}
	return &Background{ID: out.ID, PID: out.PID}, nil
}

// ProcessOutput returns the output of background process id from offset on,
// waiting up to wait for new output.
//
// The offset counts the bytes of both streams together: 0 reads from the
// start, and NextOffset reads on from the last answer.
func (c *Client) ProcessOutput(ctx context.Context, id string, offset int64, wait time.Duration) (*ProcessOutput, error) {
	var out ProcessOutput
	err := c.typed(ctx, tool.ProcessOutput, tool.ProcessOutputArgs{ID: id, Offset: offset, WaitMS: int(wait.Milliseconds())}, &out)
	return &out, err
}

// KillProcess sends signal to the process group of background process id, and
// returns the process's state.
//
// signal is a name or a number; "" means TERM. KillProcess waits up to a
// second for the process to exit.
func (c *Client) KillProcess(ctx context.Context, id, signal string) (*ProcessInfo, error) {
	var out ProcessInfo
	err := c.typed(ctx, tool.ProcessKill, tool.ProcessKillArgs{ID: id, Signal: signal}, &out)
	return &out, err
}

// ListProcesses lists the background processes, oldest first.
func (c *Client) ListProcesses(ctx context.Context) ([]ProcessInfo, error) {
	var out tool.ProcessListOutput
	err := c.typed(ctx, tool.ProcessList, struct{}{}, &out)
	return out.Processes, err
}

// typed calls tool name and decodes its structuredContent into out; a
// result with isError is a *ToolError.
func (c *Client) typed(ctx context.Context, name string, args, out any) error {
	r, err := c.callTool(ctx, name, args, false)
	if err != nil {
		return err
	}
	return structured(name, r, out)
}
