package credfile

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStandIn makes "STAND-IN-" and the value reversed, so that the test
// can tell each one.
func fakeStandIn(v string) (string, error) {
	r := []rune(v)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return "SI-" + string(r), nil
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestReplace checks each kind of file: the credentials found, and the
// file with their stand-ins in their places and the rest as it was.
func TestReplace(t *testing.T) {
	for _, c := range []struct {
		path, in, want string
		found          []string
	}{
		{"/home/u/.npmrc",
			"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=npm_secret123\n//npm.corp.example/:_auth = " + b64("me:corp-pass") + "\n//x.example/:_password=\"" + b64("xpass") + "\"\n//y.example/:_authToken=${NPM_TOKEN}\n",
			"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=SI-321terces_mpn\n//npm.corp.example/:_auth = " + b64("me:SI-ssap-proc") + "\n//x.example/:_password=\"" + b64("SI-ssapx") + "\"\n//y.example/:_authToken=${NPM_TOKEN}\n",
			[]string{"npm_secret123", "corp-pass", "xpass"}},
		{"/home/u/.netrc",
			"machine github.com login me password ghp_abc\nmachine x.example\n  login u\n  password p4ss\n",
			"machine github.com login me password SI-cba_phg\nmachine x.example\n  login u\n  password SI-ss4p\n",
			[]string{"ghp_abc", "p4ss"}},
		{"/home/u/.git-credentials",
			"https://me:ghp_abc@github.com\nhttps://x-token:glpat-1@gitlab.example\n",
			"https://me:SI-cba_phg@github.com\nhttps://x-token:SI-1-taplg@gitlab.example\n",
			[]string{"ghp_abc", "glpat-1"}},
	} {
		out, creds, err := Replace(c.path, []byte(c.in), fakeStandIn)
		require.NoError(t, err, c.path)
		assert.Equal(t, c.want, string(out), c.path)
		var values []string
		for _, cr := range creds {
			values = append(values, cr.Value)
			assert.NotContains(t, string(out), cr.Value, c.path)
		}
		assert.Equal(t, c.found, values, c.path)
	}

	out, creds, err := Replace("/home/u/.docker/config.json", []byte(`{"auths": {"ghcr.io": {"auth": "`+b64("me:ghp_abc")+`"}, "r.example": {"registrytoken": "tok-1", "identitytoken": "id-1"}}, "credsStore": ""}`), fakeStandIn)
	require.NoError(t, err)
	assert.Len(t, creds, 2)
	assert.Contains(t, string(out), b64("me:SI-cba_phg"))
	assert.Contains(t, string(out), `"registrytoken": "SI-1-kot"`)
	assert.Contains(t, string(out), `"identitytoken": "id-1"`, "left: it goes in a body")
	assert.NotContains(t, string(out), b64("me:ghp_abc"))

	// The same value twice has one stand-in.
	_, creds, err = Replace("/x/.netrc", []byte("machine a password same\nmachine b password same\n"), fakeStandIn)
	require.NoError(t, err)
	assert.Len(t, creds, 1)

	for path, in := range map[string]string{
		"/x/.bashrc":          "export TOKEN=x",
		"/x/.netrc":           "machine a login b\n",
		"/x/config.json":      "not json",
		"/x/.npmrc":           "//r/:_auth=!!!\n",
		"/x/.git-credentials": "not a url with creds\n",
	} {
		_, _, err := Replace(path, []byte(in), fakeStandIn)
		assert.Error(t, err, path)
		if err != nil {
			assert.True(t, strings.HasPrefix(err.Error(), path+": "), "the error names the file: %v", err)
		}
	}
}
