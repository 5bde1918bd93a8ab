package tool

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResultAppendJSON checks that Result.AppendJSON writes the bytes
// encoding/json writes, for every kind of result the tools give.
func TestResultAppendJSON(t *testing.T) {
	n, tr, fa := 3, true, false
	size := int64(1234)
	results := []Result{
		{},
		TextResult(""),
		TextResult("line 1\n\ttab \"quoted\" \\ back\x01\u2028 é ✓\n"),
		Errorf("read: cannot open file: %s: %s", "/x", "permission denied"),
		StructuredResult(map[string]any{"output": "x\ny", "exited": false, "exit_code": nil}),
		{Content: []Content{{Type: "text", Text: "a\nb"}}, StructuredContent: ReadOutput{Content: "a\nb", Encoding: "text", MimeType: "text/plain", LineCount: &n, Truncated: &fa}},
		{Content: []Content{{Type: "text", Text: "a"}}, StructuredContent: ReadOutput{Content: "a", Encoding: "text", MimeType: "text/x-go", LineCount: &n, Truncated: &tr, TotalLines: 90, NextOffset: 4}},
		{Content: []Content{{Type: "text", Text: "[Binary file: application/zip, 1234 bytes]"}}, StructuredContent: ReadOutput{Encoding: "metadata", MimeType: "application/zip", Size: &size}},
		{Content: []Content{{Type: "text", Text: "[Image]"}, {Type: "image", Data: "iVBORw0K", MimeType: "image/png"}},
			StructuredContent: ReadOutput{Encoding: "image", MimeType: "image/png", Width: 2, Height: 1, OriginalWidth: 4, OriginalHeight: 2, WasResized: &tr, Size: &size}},
		{Content: []Content{{Type: "text", Text: "x"}}, StructuredContent: EditOutput{Diff: "-a\n+b\n", FirstChangedLine: 1}},
		{Content: []Content{{Type: "text", Text: "raw"}}, StructuredContent: json.RawMessage(nil)},
	}
	for _, r := range results {
		want, err := json.Marshal(r)
		require.NoError(t, err)
		got, err := r.AppendJSON(nil)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
}

// TestResultAppendJSONLeavesHTML checks the one difference from
// encoding/json: '<', '>' and '&' are not escaped, and the JSON means the
// same.
func TestResultAppendJSONLeavesHTML(t *testing.T) {
	r := TextResult("<a href='x'>&amp;</a>")
	r.StructuredContent = ReadOutput{Content: r.Content[0].Text, Encoding: "text", MimeType: "text/html"}
	got, err := r.AppendJSON(nil)
	require.NoError(t, err)
	assert.Contains(t, string(got), `"text":"<a href='x'>&amp;</a>"`)
	want, err := json.Marshal(r)
	require.NoError(t, err)
	var a, b any
	require.NoError(t, json.Unmarshal(got, &a))
	require.NoError(t, json.Unmarshal(want, &b))
	assert.Equal(t, b, a)
}

// benchReadResult is the result of a read of a 1 KiB text file.
func benchReadResult() (Result, int) {
	n, fa := 16, false
	text := string(make([]byte, 0, 1024))
	for len(text) < 1024 {
		text += "the quick brown fox jumps over the lazy dog 0123456789abcdefghij\n"
	}
	r := TextResult(text)
	r.StructuredContent = ReadOutput{Content: text, Encoding: "text", MimeType: "text/plain", LineCount: &n, Truncated: &fa}
	return r, len(text)
}

func BenchmarkResultAppendJSON(b *testing.B) {
	r, size := benchReadResult()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.AppendJSON(make([]byte, 0, 2*size+256)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResultEncodingJSON(b *testing.B) {
	r, _ := benchReadResult()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}
