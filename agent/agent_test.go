package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/tool"
)

func TestEncodeBashFitsTheLimit(t *testing.T) {
	out := tool.BashOutput{Stdout: strings.Repeat("\x00", 100_000), Stderr: "é" + strings.Repeat("\x01", 20_000)}
	b := encodeBash(out, 200_000)
	require.LessOrEqual(t, len(b), 200_000)
	var r struct {
		StructuredContent tool.BashOutput
	}
	require.NoError(t, json.Unmarshal(b, &r))
	assert.True(t, r.StructuredContent.StdoutTruncated)
	assert.NotEmpty(t, r.StructuredContent.Stdout)
	assert.Less(t, len(r.StructuredContent.Stdout), 100_000)

	small := encodeBash(tool.BashOutput{Stdout: "x"}, 200_000)
	assert.NotContains(t, string(small), "truncated")
}

func TestCutUTF8(t *testing.T) {
	assert.Equal(t, "a", cutUTF8("aé", 2), "never splits a character")
	assert.Equal(t, "aé", cutUTF8("aé", 3))
	assert.Equal(t, "", cutUTF8("é", 1))
}
