// Package tool defines boxsh's tools as data.
//
// Each tool is one definition (see Define) in the tool's own file. A
// definition holds:
//   - the tool's name, description and annotations;
//   - its argument and result types, from which its JSON Schemas are derived;
//   - the side that runs it (the front or boxsh-init);
//   - the list it is in and its place there;
//   - what the audit log keeps of it.
//
// The package also defines the MCP CallToolResult the tools produce. Both
// sides share it. The front lists and validates tools with it. Each side
// registers the handlers of the tools it runs with their definitions (see
// Mux). boxsh-init decodes arguments and builds results with it.
package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Content is one MCP content block of a tool result.
type Content struct {
	// Type is "text" or "image".
	Type string
	// Text is the text of a "text" block.
	Text string
	// Data is the base64 data of an "image" block.
	Data string
	// MimeType is the MIME type of an "image" block.
	MimeType string
}

// MarshalJSON writes the fields each block type carries, always including
// "text" on text blocks (even when empty).
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Type == "image" {
		return json.Marshal(struct {
			Type     string `json:"type"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		}{c.Type, c.Data, c.MimeType})
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{c.Type, c.Text})
}

// UnmarshalJSON reads a content block of either type.
func (c *Content) UnmarshalJSON(b []byte) error {
	var v struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Content{Type: v.Type, Text: v.Text, Data: v.Data, MimeType: v.MimeType}
	return nil
}

// Result is an MCP CallToolResult.
type Result struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
}

// TextResult is a successful result carrying one text block.
func TextResult(text string) Result {
	return Result{Content: []Content{{Type: "text", Text: text}}}
}

// Errorf is a failed tool result (isError) whose text says what went wrong.
// Tool failures are results, not JSON-RPC errors.
func Errorf(format string, args ...any) Result {
	r := TextResult(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

// ErrorText is err's message without the "op path: " prefix of
// *fs.PathError and *os.LinkError, for tool messages that name the path
// themselves.
func ErrorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// StructuredResult carries v as structuredContent and, as boxsh v3 does, its
// JSON text as the single text block.
func StructuredResult(v any) Result {
	b, err := json.Marshal(v)
	if err != nil {
		return Errorf("encode result: %v", err)
	}
	r := TextResult(string(b))
	r.StructuredContent = json.RawMessage(b)
	return r
}
