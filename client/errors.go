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

// ProtocolError is a JSON-RPC error answered by the server: the request
// itself was refused (unknown tool, invalid arguments, ...), as opposed to
// a tool that ran and failed (ToolError).
type ProtocolError struct {
	// Method is the JSON-RPC method of the request.
	Method string
	// Code is the JSON-RPC error code (frame.CodeInvalidParams for invalid
	// params, ...).
	Code int
	// Message is the server's message.
	Message string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("boxsh: %s: protocol error %d: %s", e.Method, e.Code, e.Message)
}

// ToolError is a tool result with isError set: the tool ran and failed
// (a file that cannot be read, an edit that does not match, ...). A bash
// command that exits non-zero is not a ToolError: Exec returns its result.
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
