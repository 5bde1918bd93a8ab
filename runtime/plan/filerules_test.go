package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFileRuleMounts(t *testing.T) {
	fr := FileRules{
		DenyRead:  []RuledPath{{Path: "/p/a/b/.env"}, {Path: "/p/keys", Dir: true}},
		DenyWrite: []RuledPath{{Path: "/p/docs", Dir: true}},
	}
	ms, err := fileRuleMounts(fr, "/state/placeholders")
	require.NoError(t, err)
	assert.Equal(t, []string{"/p/docs", "/p/keys", "/p/a/b/.env"}, destinations(ms), "outermost first")
	assert.Equal(t, "/state/placeholders/denied", ms[2].Source)
	assert.Equal(t, "/state/placeholders/denied-dir", ms[1].Source, "a directory: the mode-0 placeholder directory")
	assert.Equal(t, "bind", ms[1].Type)
	assert.Contains(t, ms[1].Options, "ro")
	assert.Contains(t, ms[0].Options, "ro")
	assert.Equal(t, "/p/docs", ms[0].Source)

	ms, err = fileRuleMounts(FileRules{DenyRead: []RuledPath{{Path: "/p/.env"}, {Path: "/p/keys", Dir: true}}}, "")
	require.NoError(t, err)
	assert.Equal(t, "/dev/null", ms[0].Source, "without placeholders (boxsh spec without --bundle)")
	assert.Equal(t, "tmpfs", ms[1].Type)
	assert.Contains(t, ms[1].Options, "mode=000")

	_, err = fileRuleMounts(FileRules{DenyRead: []RuledPath{{Path: "p/../x"}}}, "")
	assert.Error(t, err)
}
