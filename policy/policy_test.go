package policy

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBind(t *testing.T) {
	cases := []struct {
		spec string
		want Bind
	}{
		{"ro:/usr/share", Bind{Mode: ReadOnly, Src: "/usr/share", Dst: "/usr/share"}},
		{"wr:/data/", Bind{Mode: ReadWrite, Src: "/data", Dst: "/data"}},
		{"cow:/src:/dst", Bind{Mode: CopyOnWrite, Src: "/src", Dst: "/dst"}},
		{"cow:./:../.test", Bind{Mode: CopyOnWrite, Src: "/work/proj", Dst: "/work/.test"}},
		{"ro:sub/dir", Bind{Mode: ReadOnly, Src: "/work/proj/sub/dir", Dst: "/work/proj/sub/dir"}},
	}
	for _, c := range cases {
		got, err := ParseBind(c.spec, "/work/proj")
		require.NoError(t, err, c.spec)
		assert.Equal(t, c.want, got, c.spec)
	}
	for _, bad := range []string{"", "ro", "ro:", "rw:/x", "cow:/only", "cow::/dst", "cow:/src:", "bogus:/x"} {
		_, err := ParseBind(bad, "/")
		assert.ErrorIs(t, err, ErrBind, bad)
	}
}

func TestBindString(t *testing.T) {
	assert.Equal(t, "cow:/a:/b", Bind{Mode: CopyOnWrite, Src: "/a", Dst: "/b"}.String())
	assert.Equal(t, "ro:/a", Bind{Mode: ReadOnly, Src: "/a", Dst: "/a"}.String())
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	ok := Sandbox{Enabled: true, Binds: []Bind{{Mode: ReadOnly, Src: dir, Dst: dir}}}
	assert.NoError(t, ok.Validate())

	missing := filepath.Join(dir, "missing")
	err := Sandbox{Enabled: true, Binds: []Bind{{Mode: ReadOnly, Src: missing, Dst: missing}}}.Validate()
	assert.ErrorIs(t, err, ErrBind)
	assert.Contains(t, err.Error(), "--bind ro:"+missing)

	err = Sandbox{Enabled: true, Binds: []Bind{{Mode: ReadOnly, Src: dir, Dst: dir}, {Mode: ReadWrite, Src: dir, Dst: dir}}}.Validate()
	assert.ErrorIs(t, err, ErrBind)
	assert.Contains(t, err.Error(), "already bound")
	assert.False(t, errors.Is(Sandbox{}.Validate(), ErrBind))
}
