//go:build linux

package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/boxsh/boxsh/integration/internal/outside"
)

// testPKI is a CA of the test's and a certificate it made for names.
type testPKI struct {
	caFile string // the CA's certificate, PEM (a .crt: the policy denies *.pem)
	cert   tls.Certificate
}

// newTestPKI makes a CA and a server certificate for names.
func newTestPKI(t *testing.T, names ...string) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, caKey.Public(), caKey)
	require.NoError(t, err)
	ca, err = x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, key.Public(), caKey)
	require.NoError(t, err)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	writeHostFile(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})), 0o644)
	return testPKI{caFile: caFile, cert: tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}}
}

// serveTLS serves h over TLS with the PKI's certificate for name of
// stand-in n (see serveName) until the test ends.
func (p testPKI) serveTLS(t *testing.T, n *outside.Net, name string, h http.Handler) {
	t.Helper()
	serveName(t, n, name, h, true, p.cert)
}

// requireToken serves h to requests that carry token, as a Bearer token
// or the password of Basic credentials, and 401 to the others.
func requireToken(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pass, basic := r.BasicAuth()
		if r.Header.Get("Authorization") == "Bearer "+token || basic && pass == token {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		http.Error(w, "token needed", http.StatusUnauthorized)
	})
}

// gitServer serves the bare repositories under root over git's smart HTTP
// (git http-backend), pushes included.
func gitServer(t *testing.T, root string) http.Handler {
	t.Helper()
	backend, err := exec.Command("git", "--exec-path").Output()
	require.NoError(t, err)
	return &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=ci"},
	}
}

// goSum is the go.sum of a module that needs mods.
func goSum(t *testing.T, mods []goModule) string {
	t.Helper()
	var b strings.Builder
	for _, m := range mods {
		open := func(name string) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(m.files[strings.TrimPrefix(name, m.path+"@"+m.version+"/")])), nil
		}
		var names []string
		for name := range m.files {
			names = append(names, m.path+"@"+m.version+"/"+name)
		}
		h, err := dirhash.Hash1(names, open)
		require.NoError(t, err)
		hmod, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(m.files["go.mod"])), nil
		})
		require.NoError(t, err)
		fmt.Fprintf(&b, "%s %s %s\n%s %s/go.mod %s\n", m.path, m.version, h, m.path, m.version, hmod)
	}
	return b.String()
}

// The private names of the CI job of TestCISecrets.
const (
	ciGoProxy = "goproxy.acme.example"
	ciNPM     = "registry.npmjs.org"
	ciGit     = "github.com"
)

// TestCISecrets runs a CI job's steps with --secret, and no token in the
// sandbox: a private Go module fetch, an authenticated npm install and a
// git push over HTTPS, each from a stand-in that requires its token (in
// the stand-in internet, standIn, on port 443 of its name, over TLS of a
// test CA that the front trusts through SSL_CERT_FILE as it would the
// system's). Each
// stand-in gets its token; the sandbox sees none.
func TestCISecrets(t *testing.T) {
	requireRootless(t)
	for _, tool := range []string{"go", "npm", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed on PATH for this test: %v", tool, err)
		}
	}
	n := standIn(t, outside.Config{Names: []string{ciGoProxy, ciNPM, ciGit}})
	ctx := testContext(t)
	tokens := map[string]string{
		"GOPROXY_TOKEN": "gopx_0123456789abcdefGHIJKLMN",
		"NPM_TOKEN":     "npm_0123456789abcdefGHIJKLMNop",
		"GH_TOKEN":      "ghp_0123456789abcdefGHIJKLMNopqrst",
	}
	pki := newTestPKI(t, ciGoProxy, ciNPM, ciGit)

	mods := []goModule{
		{"acme.example/words", "v1.2.0", map[string]string{
			"go.mod":   "module acme.example/words\n\ngo 1.21\n",
			"words.go": "package words\n\nfunc Hello() string { return \"hello\" }\n",
		}},
	}
	goLog, npmLog := &requestLog{}, &requestLog{}
	pkg := newNPMPackage(t, "tiny-pad", "1.0.0")
	gitRoot := t.TempDir()
	bare := filepath.Join(gitRoot, "acme", "app.git")
	require.NoError(t, exec.Command("git", "init", "-q", "--bare", bare).Run())
	pki.serveTLS(t, n, ciGoProxy, requireToken(tokens["GOPROXY_TOKEN"], goProxy(t, mods, goLog)))
	pki.serveTLS(t, n, ciNPM, requireToken(tokens["NPM_TOKEN"], npmRegistry(pkg, "https://"+ciNPM, npmLog)))
	pki.serveTLS(t, n, ciGit, requireToken(tokens["GH_TOKEN"], gitServer(t, gitRoot)))

	// The repository: a Go library that needs the private module, an npm
	// project, and a commit to push.
	repo := filepath.Join(homeDir(t), "app")
	writeFiles(t, repo, map[string]string{
		"go.mod":       "module acme.example/app\n\ngo 1.21\n\nrequire acme.example/words v1.2.0\n",
		"app.go":       "package app\n\nimport \"acme.example/words\"\n\nfunc Message() string { return words.Hello() }\n",
		"package.json": `{"name":"app","version":"1.0.0","private":true,"dependencies":{"tiny-pad":"1.0.0"}}`,
		"package-lock.json": `{"name":"app","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{` +
			`"":{"name":"app","version":"1.0.0","dependencies":{"tiny-pad":"1.0.0"}},` +
			`"node_modules/tiny-pad":{"version":"1.0.0","resolved":"` + pkg.tarballURL("https://"+ciNPM) + `","integrity":"` + pkg.integrity + `"}}}`,
		".npmrc":     "//" + ciNPM + "/:_authToken=${NPM_TOKEN}\naudit=false\nfund=false\nupdate-notifier=false\n",
		".gitignore": "node_modules/\n",
		"go.sum":     goSum(t, mods),
	})
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=CI", "-c", "user.email=ci@acme.example", "commit", "-q", "-m", "the app"}} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}

	home := homeDir(t)
	env := []string{"HOME=" + home, "SSL_CERT_FILE=" + pki.caFile}
	for k, v := range tokens {
		env = append(env, k+"="+v)
	}
	// The README's example, as printed.
	r := runShell(t, ctx, repo, env, examples(t, "README.md")["ci-secrets"])
	require.Equal(t, 0, r.code(), "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	// What the sandbox sees of the tokens, with the same flags.
	seen := runProgramIn(t, ctx, repo, "", env, boxshPath(), "--bind", "wr:"+repo,
		"--secret", "GOPROXY_TOKEN="+ciGoProxy, "--secret", "NPM_TOKEN="+ciNPM, "--secret", "GH_TOKEN="+ciGit,
		"-c", `echo "tokens: $GOPROXY_TOKEN $NPM_TOKEN $GH_TOKEN"; env; cat .npmrc; `+
			`git clone -q -b main https://x-access-token:$GH_TOKEN@`+ciGit+`/acme/app.git /tmp/clone && git -C /tmp/clone log --format=%s`)
	require.Equal(t, 0, seen.code(), seen.stderr)
	assert.Contains(t, seen.stdout, "tokens: gopx_")
	assert.True(t, strings.HasSuffix(seen.stdout, "\nthe app\n"), "a clone of what was pushed: %q", seen.stdout)
	for name, v := range tokens {
		for _, out := range []string{r.stdout, r.stderr, seen.stdout, seen.stderr} {
			assert.NotContains(t, out, v, "%s is in nothing the sandbox or the log shows", name)
		}
	}
	assert.Contains(t, goLog.take(), "/acme.example/words/@v/v1.2.0.zip", "the private module was fetched with its token")
	assert.Contains(t, npmLog.take(), "/tiny-pad/-/tiny-pad-1.0.0.tgz", "the package was installed with its token")
	assert.DirExists(t, filepath.Join(repo, "node_modules", "tiny-pad"))
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	pushed, err := exec.Command("git", "--git-dir", bare, "rev-parse", "main").Output()
	require.NoError(t, err, "the push landed")
	assert.Equal(t, string(head), string(pushed))
	_, err = os.Stat(filepath.Join(home, ".npmrc"))
	assert.True(t, os.IsNotExist(err), "nothing written in the job's home")
}
