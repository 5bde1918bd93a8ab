package rpc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigString is a JSON string of more than 64 KiB with escapes.
var bigString = func() string {
	b, _ := json.Marshal(strings.Repeat("line \"x\" \\ é ✓\n", 8000))
	return string(b)
}()

// TestLongLines checks that lines longer than the read buffer, at and
// around its size, come whole, with the messages after them. A line over
// the limit is skipped.
func TestLongLines(t *testing.T) {
	const bufSize = 256 << 10
	var in strings.Builder
	var want []string
	for i, n := range []int{bufSize - 2, bufSize - 1, bufSize, bufSize + 1, 3*bufSize + 7, 10} {
		line := strings.Repeat(string(rune('a'+i)), n)
		want = append(want, line)
		in.WriteString(line + "\r\n")
	}
	last := strings.Repeat("z", 2*bufSize)
	want = append(want, last)
	in.WriteString(last) // no newline at the end
	rd := newReader(strings.NewReader(in.String()), 4*bufSize)
	got, errs := readAll(t, rd)
	assert.Empty(t, errs)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i], got[i], "line %d", i)
	}

	rd = newReader(strings.NewReader(strings.Repeat("x", 3*bufSize)+"\n{}\n"), 2*bufSize)
	got, errs = readAll(t, rd)
	assert.Equal(t, []string{"{}"}, got)
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], errTooLarge)
}

// TestRequestEraOfLargeParams checks that the era of a request with large
// params is read as from the same params with a small content.
func TestRequestEraOfLargeParams(t *testing.T) {
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}`
	inContent, err := json.Marshal(`"io.modelcontextprotocol/protocolVersion"` + strings.Repeat("x", 70000))
	require.NoError(t, err)
	for _, p := range []string{
		`{"name":"write","arguments":{"path":"/x","content":%s},"_meta":` + meta + `}`,
		`{"_META":` + meta + `,"name":"write","arguments":{"path":"/x","content":%s}}`,
		`{"name":"write","arguments":{"path":"/x","content":%s}}`,
		`{"name":"write","arguments":{"path":"/x","content":%s},"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`,
		`{"name":"write","arguments":{"path":"/x","content":%s},"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}`,
	} {
		for _, content := range []string{bigString, string(inContent)} {
			wm, wok, werr := requestEra(json.RawMessage(strings.Replace(p, "%s", `"x"`, 1)))
			gm, gok, gerr := requestEra(json.RawMessage(strings.Replace(p, "%s", content, 1)))
			assert.Equal(t, wm, gm, "%.80s", p)
			assert.Equal(t, wok, gok, "%.80s", p)
			assert.Equal(t, werr, gerr, "%.80s", p)
		}
	}
}
