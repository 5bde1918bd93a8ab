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
		{"ro:/usr/share", Bind{ReadOnly, "/usr/share", "/usr/share"}},
		{"wr:/data/", Bind{ReadWrite, "/data", "/data"}},
		{"cow:/src:/dst", Bind{CopyOnWrite, "/src", "/dst"}},
		{"cow:./:../.test", Bind{CopyOnWrite, "/work/proj", "/work/.test"}},
		{"ro:sub/dir", Bind{ReadOnly, "/work/proj/sub/dir", "/work/proj/sub/dir"}},
	}
	for _, c := range cases {
		got, err := ParseBind(c.spec, "/work/proj")
		require.NoError(t, err, c.spec)
		assert.Equal(t, c.want, got, c.spec)
	}
	for _, bad := range []string{"", "ro", "ro:", "rw:/x", "cow:/only", "cow::/dst", "cow:/src:", "bogus:/x"} {
		_, err := ParseBind(bad, "/")
		assert.ErrorIs(t, err, ErrUsage, bad)
	}
}

func TestBindString(t *testing.T) {
	assert.Equal(t, "cow:/a:/b", Bind{CopyOnWrite, "/a", "/b"}.String())
	assert.Equal(t, "ro:/a", Bind{ReadOnly, "/a", "/a"}.String())
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	ok := Sandbox{Enabled: true, Binds: []Bind{{ReadOnly, dir, dir}}}
	assert.NoError(t, ok.Validate())

	missing := filepath.Join(dir, "missing")
	err := Sandbox{Enabled: true, Binds: []Bind{{ReadOnly, missing, missing}}}.Validate()
	assert.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "--bind ro:"+missing)

	err = Sandbox{Enabled: true, Binds: []Bind{{ReadOnly, dir, dir}, {ReadWrite, dir, dir}}}.Validate()
	assert.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "already bound")
	assert.False(t, errors.Is(Sandbox{}.Validate(), ErrUsage))
}
