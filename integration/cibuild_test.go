//go:build linux

package integration

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/integration/internal/outside"
)

// The first build of a CI job in the sandbox (issue 24): a fresh user
// (empty HOME, no caches) builds a Go module and installs an npm project
// through the allowlist, from stand-ins of the Go module proxy and the npm
// registry; directly and in a rootless container, the released boxsh in
// the stand-in internet (standIn) reaches them by name there; in a pod,
// they are on the pod's own loopback, which only the test-seam front's
// host map (BOXSH_PROXY_HOSTS) reaches.

// goModule is a module the Go proxy stand-in serves: its files by name.
type goModule struct {
	path, version string
	files         map[string]string
}

// ciModules are the modules of the stand-in: the build's module needs
// greet, which needs words.
var ciModules = []goModule{
	{"example.test/words", "v1.2.0", map[string]string{
		"go.mod":   "module example.test/words\n\ngo 1.21\n",
		"words.go": "package words\n\nfunc Hello() string { return \"hello\" }\n",
	}},
	{"example.test/greet", "v1.0.0", map[string]string{
		"go.mod":   "module example.test/greet\n\ngo 1.21\n\nrequire example.test/words v1.2.0\n",
		"greet.go": "package greet\n\nimport \"example.test/words\"\n\nfunc Greet(n string) string { return words.Hello() + \", \" + n }\n",
	}},
}

// requestLog counts a stand-in's requests by path.
type requestLog struct {
	mu    sync.Mutex
	paths []string
}

func (l *requestLog) add(p string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paths = append(l.paths, p)
}

// take returns the paths requested since the last take.
func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.paths
	l.paths = nil
	return p
}

// goProxy serves mods by the GOPROXY protocol: $mod/@v/list, .info, .mod
// and .zip (module paths of lower case only, which need no escaping).
func goProxy(t *testing.T, mods []goModule, log *requestLog) http.Handler {
	t.Helper()
	zips := map[string][]byte{}
	for _, m := range mods {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for name, content := range m.files {
			w, err := zw.Create(m.path + "@" + m.version + "/" + name)
			require.NoError(t, err)
			_, err = w.Write([]byte(content))
			require.NoError(t, err)
		}
		require.NoError(t, zw.Close())
		zips[m.path+"@"+m.version] = buf.Bytes()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r.URL.Path)
		mod, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/@v/")
		for _, m := range mods {
			if !ok || m.path != mod {
				continue
			}
			switch rest {
			case "list":
				fmt.Fprintln(w, m.version)
				return
			case m.version + ".info":
				fmt.Fprintf(w, `{"Version":%q,"Time":"2024-01-02T03:04:05Z"}`, m.version)
				return
			case m.version + ".mod":
				fmt.Fprint(w, m.files["go.mod"])
				return
			case m.version + ".zip":
				w.Header().Set("Content-Type", "application/zip")
				w.Write(zips[m.path+"@"+m.version])
				return
			}
		}
		http.NotFound(w, r)
	})
}

// npmPackage is the one package of the registry stand-in, as a tarball
// with its integrity.
type npmPackage struct {
	name, version string
	tarball       []byte
	integrity     string
	shasum        string
}

func newNPMPackage(t *testing.T, name, version string) npmPackage {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for file, content := range map[string]string{
		"package/package.json": fmt.Sprintf(`{"name":%q,"version":%q,"main":"index.js"}`, name, version),
		"package/index.js":     "module.exports = (s, n) => s.padStart(n);\n",
	} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: file, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	sum512 := sha512.Sum512(buf.Bytes())
	sum1 := sha1.Sum(buf.Bytes())
	return npmPackage{name, version, buf.Bytes(), "sha512-" + base64.StdEncoding.EncodeToString(sum512[:]), hex.EncodeToString(sum1[:])}
}

func (p npmPackage) tarballURL(registry string) string {
	return registry + "/" + p.name + "/-/" + p.name + "-" + p.version + ".tgz"
}

// npmRegistry serves the packument of pkg and its tarball, with tarball
// URLs on registry.
func npmRegistry(pkg npmPackage, registry string, log *requestLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r.URL.Path)
		switch r.URL.Path {
		case "/" + pkg.name:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{
				"name":      pkg.name,
				"dist-tags": map[string]string{"latest": pkg.version},
				"versions": map[string]any{pkg.version: map[string]any{
					"name": pkg.name, "version": pkg.version,
					"dist": map[string]string{"tarball": pkg.tarballURL(registry), "integrity": pkg.integrity, "shasum": pkg.shasum},
				}},
			})
		case "/" + pkg.name + "/-/" + pkg.name + "-" + pkg.version + ".tgz":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(pkg.tarball)
		default:
			http.NotFound(w, r)
		}
	})
}

// ciProject is a repository with a Go module that needs greet and an npm
// project whose lock file names the stand-in's package.
func ciProject(t *testing.T, pkg npmPackage, registry string) string {
	t.Helper()
	repo := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.test/app\n\ngo 1.21\n\nrequire example.test/greet v1.0.0\n",
		// A library of no standard package: a fresh build cache would
		// compile the runtime first, a minute on a CI machine.
		"app.go": "package app\n\nimport \"example.test/greet\"\n\nfunc Message() string { return greet.Greet(\"ci\") }\n",
		"package.json": fmt.Sprintf(`{"name":"app","version":"1.0.0","private":true,"dependencies":{%q:%q}}`,
			pkg.name, pkg.version),
		"package-lock.json": fmt.Sprintf(`{"name":"app","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{`+
			`"":{"name":"app","version":"1.0.0","dependencies":{%q:%q}},`+
			`"node_modules/%s":{"version":%q,"resolved":%q,"integrity":%q}}}`,
			pkg.name, pkg.version, pkg.name, pkg.version, pkg.tarballURL(registry), pkg.integrity),
	}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644))
	}
	return repo
}

// ciWorld is the stand-ins, their request logs, and the project.
type ciWorld struct {
	repo       string
	goLog      *requestLog
	npmLog     *requestLog
	env        []string // the CI job's environment: a fresh HOME
	flags      []string // boxsh's flags for the build
	buildShell string
}

const (
	goProxyName = "goproxy.example.test"
	npmRegName  = "npm.example.test"
)

func newCIWorld(t *testing.T) *ciWorld {
	t.Helper()
	return newCIWorldOn(t, nil, nil)
}

// serveOn serves h on l, or on the loopback when l is nil, until the test
// ends, and returns the address.
func serveOn(t *testing.T, l net.Listener, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if l != nil {
		srv.Listener.Close()
		srv.Listener = l
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// newCIWorldOn is newCIWorld with the Go proxy and the npm registry
// serving on goL and npmL, reached through the test-seam front's host map,
// or, when nil, on port 80 of their names in the stand-in internet.
func newCIWorldOn(t *testing.T, goL, npmL net.Listener) *ciWorld {
	t.Helper()
	for _, tool := range []string{"go", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed on PATH for the CI build test: %v", tool, err)
		}
	}
	w := &ciWorld{goLog: &requestLog{}, npmLog: &requestLog{}}
	registry := "http://" + npmRegName
	pkg := newNPMPackage(t, "tiny-pad", "1.0.0")
	if goL == nil {
		n := standIn(t, outside.Config{Names: []string{goProxyName, npmRegName}})
		serveName(t, n, goProxyName, goProxy(t, ciModules, w.goLog), false)
		serveName(t, n, npmRegName, npmRegistry(pkg, registry, w.npmLog), false)
	} else {
		useTestSeamFront(t)
		gp := serveOn(t, goL, goProxy(t, ciModules, w.goLog))
		np := serveOn(t, npmL, npmRegistry(pkg, registry, w.npmLog))
		t.Setenv("BOXSH_PROXY_HOSTS", goProxyName+"="+gp+","+npmRegName+"="+np)
	}
	w.repo = ciProject(t, pkg, registry)
	home := homeDir(t)
	w.env = []string{
		"HOME=" + home,
		"GOPROXY=http://" + goProxyName, "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"npm_config_registry=" + registry + "/", "npm_config_audit=false", "npm_config_fund=false",
		"npm_config_update_notifier=false",
	}
	w.flags = []string{"--sandbox", "--bind", "wr:" + w.repo, "--network", "allowlist",
		"--allow-domain", goProxyName, "--allow-domain", npmRegName,
		"--env", "GOPROXY", "--env", "GOSUMDB", "--env", "GOFLAGS", "--env", "GOTOOLCHAIN", "--env", "npm_config_*"}
	w.buildShell = "set -e; cd " + w.repo + "; go mod download && go build ./... && npm ci && node -e 'console.log(require(\"tiny-pad\")(\"x\", 3))'"
	return w
}

// build runs the CI build in the sandbox with extra flags.
func (w *ciWorld) build(t *testing.T, extra ...string) runResult {
	t.Helper()
	return w.buildIn(t, nil, extra...)
}

// buildIn is build with boxsh run by the command prefix wrap (a container
// stand-in), or directly when wrap is empty. In the stand-in internet the
// container is made inside it.
func (w *ciWorld) buildIn(t *testing.T, wrap []string, extra ...string) runResult {
	t.Helper()
	argv := append(append(append([]string{}, wrap...), boxshPath()), w.args(w.buildShell, extra...)...)
	if len(wrap) > 0 && activeStandIn != nil {
		argv = activeStandIn.CommandIn(w.repo, append(append(append([]string{}, wrap...), standInProgram), w.args(w.buildShell, extra...)...)...)
	}
	r := runProgramIn(t, testContext(t), w.repo, "", w.env, argv[0], argv[1:]...)
	w.checkBuild(t, r)
	return r
}

// args are boxsh's arguments that run shell in the build's sandbox, with
// extra flags.
func (w *ciWorld) args(shell string, extra ...string) []string {
	return append(append(append([]string{}, w.flags...), extra...), "-c", shell)
}

// checkBuild checks that the build r succeeded.
func (w *ciWorld) checkBuild(t *testing.T, r runResult) {
	t.Helper()
	require.Equal(t, 0, r.code(), "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.FileExists(t, filepath.Join(w.repo, "go.sum"), "the modules were downloaded")
	assert.Contains(t, r.stdout, "  x\n", "the npm package was installed")
}

func TestCIBuildFreshUser(t *testing.T) {
	requireRootless(t)
	w := newCIWorld(t)
	w.build(t)
	got := w.goLog.take()
	assert.Contains(t, got, "/example.test/greet/@v/v1.0.0.zip")
	assert.Contains(t, got, "/example.test/words/@v/v1.2.0.zip")
	assert.Contains(t, w.npmLog.take(), "/tiny-pad/-/tiny-pad-1.0.0.tgz")
	assert.FileExists(t, filepath.Join(w.repo, "node_modules", "tiny-pad", "index.js"), "the repository's writes land on the host")
	entries, err := os.ReadDir(strings.TrimPrefix(w.env[0], "HOME="))
	require.NoError(t, err)
	assert.Empty(t, entries, "the caches went to the sandbox's own home, not the host's")
}

// TestCIBuildInRootlessContainer runs the same build as a CI job in a
// rootless container runs it. boxsh runs as uid 0 of a user namespace of
// its own. That is the stand-in of Podman rootless and of pods with a user
// namespace (see containers_test.go).
func TestCIBuildInRootlessContainer(t *testing.T) {
	requireRootless(t)
	w := newCIWorld(t)
	w.buildIn(t, rootlessContainer)
	assert.Contains(t, w.goLog.take(), "/example.test/greet/@v/v1.0.0.zip")
	assert.Contains(t, w.npmLog.take(), "/tiny-pad/-/tiny-pad-1.0.0.tgz")
	assert.FileExists(t, filepath.Join(w.repo, "node_modules", "tiny-pad", "index.js"))
}

// TestCIBuildCache checks that with --cache DIR the caches outlive the run:
// the second build downloads nothing.
func TestCIBuildCache(t *testing.T) {
	requireRootless(t)
	w := newCIWorld(t)
	cache := t.TempDir()
	// Go makes its module cache read-only: make it writable again, so
	// that the test can remove it.
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+w", cache).Run() })
	w.build(t, "--cache", cache)
	assert.NotEmpty(t, w.goLog.take())
	assert.NotEmpty(t, w.npmLog.take())
	assert.DirExists(t, filepath.Join(cache, "go-mod", "example.test", "greet@v1.0.0"))
	assert.DirExists(t, filepath.Join(cache, "go-build"))
	assert.DirExists(t, filepath.Join(cache, "npm", "_cacache"))
	require.NoError(t, os.RemoveAll(filepath.Join(w.repo, "node_modules")))
	r := w.build(t, "--cache", cache)
	assert.Empty(t, w.goLog.take(), "Go downloaded nothing the second time\n%s", r.stderr)
	assert.Empty(t, w.npmLog.take(), "npm downloaded nothing the second time\n%s", r.stderr)
}

// TestCIBuildInPod runs the same build in a pod with a user namespace:
// rootless runc running the bundle of podBundle (see TestContainerPod).
//
// As in a pod, the container joins the user and network namespaces that the
// pod's sandbox container holds (podSidecar). The stand-ins serve in that
// network namespace, which neither the host nor the sandbox in the pod
// shares. So the build reaches them only through the proxy of the boxsh in
// the pod. The loopback there stands for the outside world through the test
// build's host map, as in the other network tests; a release build refuses
// the pod's own addresses.
//
// The pod's image is busybox and boxsh, with the host's /usr, Go and
// Node.js bound read-only, as a CI image has its toolchains. The repository
// and the job's HOME are bound read-write.
func TestCIBuildInPod(t *testing.T) {
	requireRootless(t)
	runc := requireRunc(t)
	side := startPodSidecar(t, 3)
	w := newCIWorldOn(t, side.listeners[0], side.listeners[1])
	// A service of the pod the build is not allowed to reach.
	var otherLog requestLog
	other := serveOn(t, side.listeners[2], http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		otherLog.add(r.URL.Path)
		fmt.Fprint(rw, "reached")
	}))
	hosts := os.Getenv("BOXSH_PROXY_HOSTS") + ",other.example.test=" + other
	probe := w.buildShell + "; busybox wget -q -O- http://other.example.test/proxied && echo LEAK; " +
		"busybox wget -Y off -q -O- http://" + other + "/direct && echo LEAK; true"

	binds, path := podToolchain(t)
	home := strings.TrimPrefix(w.env[0], "HOME=")
	bundle := podBundle(t, false, func(root string, s *specs.Spec) {
		// The host's libraries, as the host has them: merged into /usr
		// (symlinks), or directories of their own.
		for _, d := range []string{"/lib", "/lib32", "/lib64"} {
			if target, err := os.Readlink(d); err == nil {
				require.NoError(t, os.Symlink(target, filepath.Join(root, d)))
			} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				s.Mounts = append(s.Mounts, specs.Mount{Destination: d, Type: "bind", Source: d, Options: []string{"rbind", "ro", "nosuid", "nodev"}})
			}
		}
		s.Mounts = append(s.Mounts, binds...)
		for _, d := range []string{w.repo, home} {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: d, Type: "bind", Source: d, Options: []string{"rbind", "rw", "nosuid", "nodev"}})
		}
		s.Process.Env = append([]string{"PATH=/bin:" + path + ":/usr/bin", "BOXSH_PROXY_HOSTS=" + hosts}, w.env...)
		s.Process.Cwd = w.repo
		for i, ns := range s.Linux.Namespaces {
			switch ns.Type {
			case specs.UserNamespace:
				s.Linux.Namespaces[i].Path = side.nsPath("user")
			case specs.NetworkNamespace:
				s.Linux.Namespaces[i].Path = side.nsPath("net")
			}
		}
	}, w.args(probe)...)
	r := runPod(t, runc, bundle)
	w.checkBuild(t, r)
	got := w.goLog.take()
	assert.Contains(t, got, "/example.test/greet/@v/v1.0.0.zip")
	assert.Contains(t, got, "/example.test/words/@v/v1.2.0.zip")
	assert.Contains(t, w.npmLog.take(), "/tiny-pad/-/tiny-pad-1.0.0.tgz")
	assert.FileExists(t, filepath.Join(w.repo, "node_modules", "tiny-pad", "index.js"), "the repository's writes land on the host")
	entries, err := os.ReadDir(home)
	require.NoError(t, err)
	assert.Empty(t, entries, "the caches went to the sandbox's own home, not the job's")

	assert.NotContains(t, r.stdout, "LEAK")
	assert.Empty(t, otherLog.take(), "a service of the pod not allowed was reached")
	assert.Contains(t, r.stderr, "other.example.test is not allowed (run with --allow-domain other.example.test)")
}

// podToolchain returns the read-only binds that give a pod the host's Go
// and Node.js at their paths, and the directories of their commands for
// PATH. The binds are the host's /usr, GOROOT, and node's prefix when it is
// not /usr.
func podToolchain(t *testing.T) ([]specs.Mount, string) {
	t.Helper()
	ro := func(d string) specs.Mount {
		return specs.Mount{Destination: d, Type: "bind", Source: d, Options: []string{"rbind", "ro", "nosuid", "nodev"}}
	}
	binds := []specs.Mount{ro("/usr")}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err, "go env GOROOT")
	goroot := strings.TrimSpace(string(out))
	binds = append(binds, ro(goroot))
	dirs := []string{filepath.Join(goroot, "bin")}
	node, err := exec.LookPath("node")
	require.NoError(t, err)
	if prefix := filepath.Dir(filepath.Dir(node)); prefix != "/usr" {
		binds = append(binds, ro(prefix))
		dirs = append(dirs, filepath.Join(prefix, "bin"))
	}
	return binds, strings.Join(dirs, ":")
}
