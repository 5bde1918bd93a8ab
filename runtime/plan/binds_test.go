package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/policy"
)

func TestOverlayEscape(t *testing.T) {
	assert.Equal(t, "/plain/path", overlayEscape("/plain/path"))
	assert.Equal(t, `/a\,b\:c\\d`, overlayEscape(`/a,b:c\d`))
}

func TestCowDirs(t *testing.T) {
	upper, work := CowDirs(policy.Bind{Mode: policy.CopyOnWrite, Src: "/src", Dst: "/tmp/session/dst"})
	assert.Equal(t, "/tmp/session/dst", upper)
	assert.Equal(t, "/tmp/session/.boxsh/dst", work)
	upper, work = CowDirs(policy.Bind{Mode: policy.CopyOnWrite, Src: "/src", Dst: "/dst"})
	assert.Equal(t, "/dst", upper)
	assert.Equal(t, "/.boxsh/dst", work)
}
