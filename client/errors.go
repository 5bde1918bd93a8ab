package client

import (
	"errors"
	"fmt"
	"strings"
)

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("boxsh client: closed")

// ErrServerGone matches every *ServerGoneError with errors.Is.
var ErrServerGone = errors.New("boxsh: server gone")

// ProtocolError is a JSON-RPC error answered by the server.
//
// The server refused the request itself, for an unknown tool, invalid
// arguments and the like. A tool that ran and failed is a ToolError instead.
type ProtocolError struct {
	// Method is the JSON-RPC method of the request.
	Method string
	// Code is the JSON-RPC error code (initproto.CodeInvalidParams for invalid
	// params, ...).
	Code int
	// Message is the server's message.
	Message string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("boxsh: %s: protocol error %d: %s", e.Method, e.Code, e.Message)
}

// ToolError is a tool result with isError set: the tool ran and failed.
//
// Examples are a file that cannot be read, or an edit that does not match. A
// bash command that exits non-zero is not a ToolError: Exec returns its
// result.
type ToolError struct {
	// Tool is the tool's name.
	Tool string
	// Message is the text of the result.
	Message string
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("boxsh: %s: %s", e.Tool, e.Message)
}

// ServerGoneError reports that the server process exited (or its pipes
// closed) before answering. The Client is no longer usable; Start a new
// one.
type ServerGoneError struct {
	// Err is how the process ended (an *exec.ExitError) or the read error.
	Err error
	// Stderr holds the last lines the server wrote to its stderr.
	Stderr string
}

func (e *ServerGoneError) Error() string {
	var b strings.Builder
	b.WriteString("boxsh: server gone")
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString("; its last stderr lines:\n")
		b.WriteString(s)
	}
	return b.String()
}

func (e *ServerGoneError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrServerGone) true.
func (e *ServerGoneError) Is(target error) bool { return target == ErrServerGone }

// StartError reports that the server could not start.
//
// Either the client found Options wrong before running the server (a bind
// whose source is missing, an unknown bind or network mode), or the server
// exited before it served (its own checks refused the configuration,
// boxsh-init is missing, ...). Unlike a *ServerGoneError, starting again with
// the same Options fails the same way: fix the configuration first.
type StartError struct {
	// Message is the one-line reason, as the server printed it or the
	// client found it. For example: "boxsh: --bind ro:/x: source /x: no
	// such file or directory".
	Message string
	// ExitCode is the server's exit status; -1 when it did not run or was
	// killed by a signal.
	ExitCode int
	// Stderr holds the last lines the server wrote to its stderr, if it
	// ran.
	Stderr string
	// Err is the underlying error, if any (an *exec.ExitError, ...).
	Err error
}

func (e *StartError) Error() string {
	msg := strings.TrimPrefix(e.Message, "boxsh: ")
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return "boxsh: start: " + msg
}

func (e *StartError) Unwrap() error { return e.Err }

// startFailed turns the end of a server that exited during Start into a
// *StartError, its message the server's last error line.
func startFailed(gone *ServerGoneError, code int) *StartError {
	msg := ""
	lines := strings.Split(strings.TrimSpace(gone.Stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "boxsh: ") {
			msg = l
			break
		}
	}
	if msg == "" && len(lines) > 0 {
		msg = strings.TrimSpace(lines[len(lines)-1])
	}
	if msg == "" && gone.Err != nil {
		msg = "server exited: " + gone.Err.Error()
	}
	return &StartError{Message: msg, ExitCode: code, Stderr: gone.Stderr, Err: gone.Err}
}

// lastLines returns at most n trailing lines of s.
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		i = strings.LastIndexByte(s[:i], '\n')
		if i < 0 {
			return s
		}
	}
	if i <= 0 {
		return s
	}
	return s[i+1:]
}
