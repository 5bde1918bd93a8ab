package jsontest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUniqueKeys(t *testing.T) {
	for _, ok := range []string{
		`{}`, `[]`, `1`, `"a"`, `null`, ` {"a":1} ` + "\n",
		`{"a":{"b":1},"b":{"a":1,"b":[{"a":1},{"a":2}]}}`,
		`{"_meta":{"x":1},"result":{"_meta":{"x":2}}}`,
	} {
		assert.NoError(t, UniqueKeys([]byte(ok)), ok)
	}
	for bad, where := range map[string]string{
		`{"a":1,"a":2}`: `$: member "a"`,
		`{"resultType":"complete","_meta":{},"_meta":{}}`: `$: member "_meta"`,
		`{"r":{"x":[{"k":1,"k":1}]}}`:                     `$.r.x[0]: member "k"`,
		`{"a":1,"\u0061":2}`:                              `$: member "a"`,
		`{"a":1`:                                          `$`,
		`{"a":1}{}`:                                       `more after`,
		`{"a":1,}`:                                        `$`,
	} {
		err := UniqueKeys([]byte(bad))
		if assert.Error(t, err, bad) {
			assert.Contains(t, err.Error(), where, bad)
		}
	}
}

func TestReader(t *testing.T) {
	good := "{\"a\":1}\nevent: message\ndata: {\"b\":[1]}\n\n{\"c\":2}"
	b, err := io.ReadAll(NewReader(strings.NewReader(good)))
	require.NoError(t, err)
	assert.Equal(t, good, string(b))

	for _, bad := range []string{
		"{\"a\":1}\n{\"id\":1,\"result\":{\"_meta\":{},\"_meta\":{}}}\n{\"c\":2}\n",
		"event: message\ndata: {\"id\":1,\"id\":2}\n\n",
	} {
		r := NewReader(strings.NewReader(bad))
		b, err := io.ReadAll(r)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "twice")
		assert.NotContains(t, string(b), `"id":2`, "the bad line is not passed on")
		assert.NotContains(t, string(b), `"c"`, "nothing after it either")
	}
}

func TestTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Query().Get("body"))
	}))
	defer srv.Close()
	get := func(body string) (string, error) {
		res, err := NewClient().Get(srv.URL + "?body=" + url.QueryEscape(body))
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return string(b), err
	}
	b, err := get(`{"a":{"b":1}}`)
	require.NoError(t, err)
	assert.Equal(t, `{"a":{"b":1}}`, b)
	_, err = get(`{"a":{"b":1,"b":2}}`)
	assert.ErrorContains(t, err, `$.a: member "b" twice`)
}
