package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/boxsh/boxsh/client"
	"github.com/boxsh/boxsh/client/apitype"
)

// deployDir holds the Kubernetes manifests and the router's
// configuration.
const deployDir = "../deploy"

// manifests are the documents of deploy/'s YAML files, by kind and name.
type manifests map[string]map[string]any

// readManifests parses every document of deploy/*.yaml but the
// kustomization.
func readManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "*.yaml"))
	require.NoError(t, err)
	m := manifests{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			kind, _ := doc["kind"].(string)
			name, _ := dig(doc, "metadata", "name").(string)
			require.NotEmpty(t, kind, f)
			require.NotEmpty(t, name, f)
			m[kind+"/"+name] = doc
		}
	}
	return m
}

// get returns the document kind/name.
func (m manifests) get(t *testing.T, kind, name string) map[string]any {
	t.Helper()
	doc := m[kind+"/"+name]
	require.NotNil(t, doc, "deploy/ has no %s %s", kind, name)
	return doc
}

// dig returns the value at path (map keys and list indexes) in v, or nil.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// strs is the list of strings v.
func strs(t *testing.T, v any) []string {
	t.Helper()
	l, ok := v.([]any)
	require.True(t, ok, "not a list: %v", v)
	out := make([]string, len(l))
	for i, e := range l {
		s, ok := e.(string)
		require.True(t, ok, "not a string: %v", e)
		out[i] = s
	}
	return out
}

// boxshPod is what the test takes from the StatefulSet's pod: the
// container's command line, working directory, environment and mounts.
type boxshPod struct {
	argv    []string
	workdir string
	// env are the variables set to a value; fieldEnv those from the
	// downward API (name → field path).
	env      map[string]string
	fieldEnv map[string]string
	// mounts are the volumes' mount paths by name.
	mounts map[string]string
}

// podOf reads the boxsh container of the StatefulSet boxsh.
func podOf(t *testing.T, m manifests) boxshPod {
	t.Helper()
	c := dig(m.get(t, "StatefulSet", "boxsh"), "spec", "template", "spec", "containers", 0)
	require.Equal(t, "boxsh", dig(c, "name"))
	p := boxshPod{
		argv:     append(strs(t, dig(c, "command")), strs(t, dig(c, "args"))...),
		env:      map[string]string{},
		fieldEnv: map[string]string{},
		mounts:   map[string]string{},
	}
	p.workdir, _ = dig(c, "workingDir").(string)
	for _, e := range dig(c, "env").([]any) {
		name := dig(e, "name").(string)
		if f, ok := dig(e, "valueFrom", "fieldRef", "fieldPath").(string); ok {
			p.fieldEnv[name] = f
			continue
		}
		v, ok := dig(e, "value").(string)
		require.True(t, ok, "env %s has no value", name)
		p.env[name] = v
	}
	for _, v := range dig(c, "volumeMounts").([]any) {
		p.mounts[dig(v, "name").(string)] = dig(v, "mountPath").(string)
	}
	return p
}

// The manifests hold every setting docs/containers.md names for a pod
// with a user namespace, the token from a Secret, the probes, a state
// volume per replica and the workspace read-only; a Service per replica
// and the router's. kubectl, if installed, builds the kustomization.
func TestDeployManifests(t *testing.T) {
	t.Parallel()
	m := readManifests(t)
	sts := m.get(t, "StatefulSet", "boxsh")
	spec := dig(sts, "spec", "template", "spec")
	assert.Equal(t, false, dig(spec, "hostUsers"), "a user namespace of the pod's own")
	c := dig(spec, "containers", 0)
	assert.Equal(t, "Unmasked", dig(c, "securityContext", "procMount"))
	assert.Equal(t, "Unconfined", dig(c, "securityContext", "seccompProfile", "type"))
	containers, err := os.ReadFile("../docs/containers.md")
	require.NoError(t, err)
	assert.Contains(t, string(containers), "`securityContext: {procMount: Unmasked, seccompProfile: {type: Unconfined}}`", "the settings docs/containers.md names")

	pod := podOf(t, m)
	// The token: a file of the Secret boxsh-token, given to --token-file.
	i := slices.Index(pod.argv, "--token-file")
	require.GreaterOrEqual(t, i, 0, "the server reads its token from a file")
	tokenPath := pod.argv[i+1]
	var tokenVol map[string]any
	for _, v := range dig(spec, "volumes").([]any) {
		if dig(v, "name") == "token" {
			tokenVol = v.(map[string]any)
		}
	}
	require.NotNil(t, tokenVol, "a token volume")
	assert.Equal(t, "boxsh-token", dig(tokenVol, "secret", "secretName"))
	assert.Equal(t, 0o400, dig(tokenVol, "secret", "defaultMode"), "readable by the server only: boxsh refuses others")
	var tokenMount any
	for _, v := range dig(c, "volumeMounts").([]any) {
		if dig(v, "name") == "token" {
			tokenMount = v
		}
	}
	assert.Equal(t, tokenPath, dig(tokenMount, "mountPath"))
	assert.Equal(t, "token", dig(tokenMount, "subPath"), "the file itself: boxsh refuses a token file that is a link")

	for _, probe := range []struct{ name, path string }{{"startupProbe", "/healthz"}, {"livenessProbe", "/healthz"}, {"readinessProbe", "/readyz"}} {
		assert.Equal(t, probe.path, dig(c, probe.name, "httpGet", "path"), probe.name)
		assert.Equal(t, "http", dig(c, probe.name, "httpGet", "port"), probe.name)
	}
	assert.Equal(t, "0.0.0.0:8080", pod.argv[slices.Index(pod.argv, "--listen")+1])
	assert.Equal(t, 8080, dig(c, "ports", 0, "containerPort"))
	assert.Equal(t, "metadata.name", pod.fieldEnv["POD_NAME"])
	assert.Equal(t, "$(POD_NAME)", pod.argv[slices.Index(pod.argv, "--server-id")+1], "the pod's name names the server")

	// The state volume: one per replica, where XDG_STATE_HOME is.
	assert.Equal(t, "state", dig(sts, "spec", "volumeClaimTemplates", 0, "metadata", "name"))
	assert.Equal(t, []string{"ReadWriteOnce"}, strs(t, dig(sts, "spec", "volumeClaimTemplates", 0, "spec", "accessModes")))
	assert.Equal(t, pod.mounts["state"], pod.env["XDG_STATE_HOME"])
	// The workspace: read-only, the server's working directory.
	for _, v := range dig(c, "volumeMounts").([]any) {
		if dig(v, "name") == "workspace" {
			assert.Equal(t, true, dig(v, "readOnly"), "the workspace is mounted read-only")
			assert.Equal(t, pod.workdir, dig(v, "mountPath"))
		}
	}
	require.Contains(t, pod.mounts, "workspace")

	// The Services: the StatefulSet's headless one, one per replica (the
	// router's upstreams), the router's.
	assert.Equal(t, "None", dig(m.get(t, "Service", "boxsh-pods"), "spec", "clusterIP"))
	assert.Equal(t, "boxsh-pods", dig(sts, "spec", "serviceName"))
	replicas := dig(sts, "spec", "replicas").(int)
	conf, err := os.ReadFile(filepath.Join(deployDir, "nginx", "nginx.conf"))
	require.NoError(t, err)
	for n := range replicas {
		name := fmt.Sprintf("boxsh-%d", n)
		svc := m.get(t, "Service", name)
		assert.Equal(t, name, dig(svc, "spec", "selector", "statefulset.kubernetes.io/pod-name"))
		assert.Equal(t, 2, strings.Count(string(conf), "server "+name+":8080 max_fails=0;"), "the router reaches %s in the hash and alone", name)
		assert.Contains(t, string(conf), fmt.Sprintf("~^/pods/%d/  pod%d;", n, n))
	}
	assert.NotContains(t, string(conf), fmt.Sprintf("boxsh-%d:", replicas), "no more servers in the router than replicas")
	router := m.get(t, "Deployment", "boxsh-router")
	assert.Equal(t, "boxsh-router", dig(router, "spec", "template", "spec", "volumes", 0, "configMap", "name"))
	assert.Equal(t, "boxsh-router", dig(m.get(t, "Service", "boxsh"), "spec", "selector", "app.kubernetes.io/name"))

	// kubectl builds the kustomization offline, and decodes each of its
	// objects (kind, apiVersion, metadata) with --local. A dry-run apply
	// or create needs a cluster's API (its discovery, for the objects'
	// REST mappings), which this test has none of.
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed (Debian's kubernetes-client): the kustomization is not built")
	}
	out, err := exec.Command(kubectl, "kustomize", deployDir).CombinedOutput()
	require.NoError(t, err, "kubectl kustomize: %s", out)
	assert.Contains(t, string(out), "kind: ConfigMap")
	assert.Contains(t, string(out), "proxy_next_upstream off;", "the router's configuration, from nginx/nginx.conf")
	cmd := exec.Command(kubectl, "annotate", "--local", "-o", "name", "-f", "-", "boxsh.dev/checked=yes")
	cmd.Stdin = bytes.NewReader(out)
	names, err := cmd.CombinedOutput()
	require.NoError(t, err, "kubectl annotate --local: %s", names)
	var want []string
	for key := range m {
		kind, name, _ := strings.Cut(key, "/")
		group := map[string]string{"StatefulSet": ".apps", "Deployment": ".apps"}[kind]
		want = append(want, strings.ToLower(kind)+group+"/"+name)
	}
	var got []string
	for _, n := range strings.Fields(string(names)) {
		if !strings.HasPrefix(n, "configmap/") { // the generated one, its name hashed
			got = append(got, n)
		}
	}
	assert.ElementsMatch(t, want, got, "every object of deploy/ decodes as a Kubernetes object")
}

// deployServer is one boxsh server of TestDeploy, run with the
// StatefulSet's command line in a user and network namespace of its own,
// listening on the Unix socket sock.
type deployServer struct {
	id, sock   string
	state, run string
	cmd        *exec.Cmd
	stderr     *lockedBuffer
	exited     chan struct{}
}

// base is the server's base URL, for the Go client.
func (s *deployServer) base() string { return "http://unix:" + s.sock + ":" }

// deployRig is the servers, the router and what they share.
type deployRig struct {
	pod       boxshPod
	workspace string
	tokenFile string
	token     string
	servers   []*deployServer
}

// argv is the pod's command line for server s, its paths and address
// those of the test.
func (r *deployRig) argv(t *testing.T, s *deployServer) []string {
	t.Helper()
	out := make([]string, len(r.pod.argv))
	for i, a := range r.pod.argv {
		switch {
		case i == 0 && a == "boxsh":
			a = boxshPath()
		case a == "0.0.0.0:8080":
			a = "unix:" + s.sock
		case a == r.pod.mounts["token"]:
			a = r.tokenFile
		case a == "$(POD_NAME)":
			a = s.id
		}
		require.NotContains(t, a, "$(", "an argument the test does not know how to give")
		out[i] = a
	}
	return out
}

// start runs server s (again, on its state directory and socket) in a
// user and network namespace of its own, as a pod's: unshare execs boxsh,
// so the process is the server's.
func (r *deployRig) start(t *testing.T, s *deployServer) {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare is not installed (Debian's util-linux)")
	}
	argv := r.argv(t, s)
	cmd := exec.Command(unshare, append([]string{"--user", "--net", "--map-current-user", "--"}, argv...)...)
	cmd.Dir = r.workspace
	paths := map[string]string{r.pod.mounts["state"]: s.state, r.pod.mounts["run"]: s.run}
	cmd.Env = os.Environ()
	for name, v := range r.pod.env {
		p, ok := paths[v]
		require.True(t, ok, "env %s=%s: not a path the test gives", name, v)
		cmd.Env = append(cmd.Env, name+"="+p)
	}
	for name := range r.pod.fieldEnv {
		cmd.Env = append(cmd.Env, name+"="+s.id)
	}
	s.cmd, s.stderr, s.exited = cmd, &lockedBuffer{}, make(chan struct{})
	cmd.Stderr = s.stderr
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	exited := s.exited
	go func() { _ = cmd.Wait(); close(exited) }()
	url := waitListening(t, s.id, s.stderr, exited)
	require.Equal(t, s.base()+"/mcp", url)
	hc := &http.Client{Transport: client.UnixSocketTransport(s.sock)}
	defer hc.CloseIdleConnections()
	// Ready: the warm pool is full.
	waitFor(t, replyTimeout, s.id+" ready", func() bool {
		res, err := hc.Get("http://localhost/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
}

// stop ends server s with sig and waits for it.
func (s *deployServer) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(exitTimeout):
		t.Errorf("%s did not stop on %v", s.id, sig)
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// alive tells whether s runs.
func (s *deployServer) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// waitFor polls cond until it holds, failing after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, d, 20*time.Millisecond, "waiting for %s", what)
}

// startRouter runs NGINX with the router's command line and
// nginx/nginx.conf, its upstreams the servers' sockets, listening on a
// free loopback port; it returns the router's base URL.
func (r *deployRig) startRouter(t *testing.T, m manifests) string {
	t.Helper()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	if _, err := os.Stat(nginx); err != nil {
		t.Skip("nginx is not installed (Debian's nginx-light: scripts/deps.sh installs it)")
	}
	conf, err := os.ReadFile(filepath.Join(deployDir, "nginx", "nginx.conf"))
	require.NoError(t, err)
	text := string(conf)
	for i, s := range r.servers {
		from := fmt.Sprintf("boxsh-%d:8080", i)
		require.Equal(t, 2, strings.Count(text, from), from)
		text = strings.ReplaceAll(text, from, "unix:"+s.sock)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	require.Equal(t, 1, strings.Count(text, "listen 8080;"))
	text = strings.Replace(text, "listen 8080;", "listen "+addr+";", 1)
	prefix := t.TempDir() + "/"
	confPath := filepath.Join(prefix, "nginx.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(text), 0o644))

	c := dig(m.get(t, "Deployment", "boxsh-router"), "spec", "template", "spec", "containers", 0)
	argv := strs(t, dig(c, "command"))
	confDir := ""
	for _, v := range dig(c, "volumeMounts").([]any) {
		if dig(v, "name") == "config" {
			confDir = dig(v, "mountPath").(string)
		}
	}
	for i, a := range argv {
		switch {
		case i == 0 && a == "nginx":
			argv[i] = nginx
		case a == filepath.Join(confDir, "nginx.conf"):
			argv[i] = confPath
		case i > 0 && argv[i-1] == "-p":
			argv[i] = prefix
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(exitTimeout):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("nginx:\n%s", truncate(out.String()))
		}
	})
	base := "http://" + addr
	waitFor(t, replyTimeout, "the router", func() bool {
		select {
		case <-done:
			t.Fatalf("nginx exited:\n%s", out.String())
		default:
		}
		res, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return base
}

// raw sends a request to url with the token, and returns the answer's
// status, server and body.
func raw(t *testing.T, ctx context.Context, method, url, token string, hdr map[string]string, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get(client.ServerHeader), string(b)
}

// Three servers run with the StatefulSet's command line behind NGINX with
// the shipped router configuration; the Go client, pointed at the router,
// creates 30 sandboxes, each on one server that all its requests reach.
// One server killed (SIGKILL) and started again on its state directory
// hosts its sandboxes again, with their files, and meanwhile their calls
// fail with client.ErrSandboxUnavailable; the others never stop. A SIGTERM
// lets a call in flight finish, and the sandboxes' files stay for the next
// start. Each server runs in a user and network namespace of its own, as a
// pod does, listening on a Unix socket (--listen unix:PATH) that NGINX's
// upstreams name, since no TCP port in the server's namespace can be
// reached from the test's; a server killed leaves its socket, which the
// next start replaces.
func TestDeploy(t *testing.T) {
	requireRootless(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := readManifests(t)
	r := &deployRig{pod: podOf(t, m), workspace: t.TempDir(), token: strings.Repeat("ab", 32)}
	require.NoError(t, os.WriteFile(filepath.Join(r.workspace, "seed.txt"), []byte("seed\n"), 0o644))
	r.tokenFile = filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(r.tokenFile, []byte(r.token+"\n"), 0o600))
	replicas := dig(m.get(t, "StatefulSet", "boxsh"), "spec", "replicas").(int)
	require.Equal(t, 3, replicas)
	for i := range replicas {
		s := &deployServer{id: fmt.Sprintf("boxsh-%d", i), state: t.TempDir(), run: t.TempDir()}
		s.sock = filepath.Join(s.run, "boxsh.sock")
		r.servers = append(r.servers, s)
		t.Cleanup(func() {
			if s.alive() {
				s.stop(t, syscall.SIGTERM)
			}
			if t.Failed() {
				t.Logf("%s stderr:\n%s", s.id, truncate(s.stderr.String()))
			}
		})
	}
	for _, s := range r.servers {
		r.start(t, s)
	}
	// Each server is in a network namespace of its own, none the test's.
	own, err := os.Readlink("/proc/self/ns/net")
	require.NoError(t, err)
	netns := map[string]string{own: "the test"}
	for _, s := range r.servers {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", s.cmd.Process.Pid))
		require.NoError(t, err, s.id)
		require.NotContains(t, netns, ns, "%s's network namespace is %s's", s.id, netns[ns])
		netns[ns] = s.id
	}
	base := r.startRouter(t, m)
	srv := client.NewServer(base, r.token, nil)
	pids := map[string]int{}
	for _, s := range r.servers {
		pids[s.id] = s.cmd.Process.Pid
	}

	// 30 sandboxes through the router: by POST (X-Sandbox, as the Go
	// client sends it) and by PUT.
	type placed struct{ server, token string }
	where := map[string]placed{}
	began := time.Now()
	for i := range 30 {
		name := fmt.Sprintf("sb-%02d", i)
		if i%5 == 4 {
			status, server, body := raw(t, ctx, http.MethodPut, base+"/v1/sandboxes/"+name, r.token, nil, `{"from":"workspace"}`)
			require.Equal(t, http.StatusCreated, status, body)
			var info apitype.SandboxInfo
			require.NoError(t, json.Unmarshal([]byte(body), &info))
			assert.Equal(t, server, info.Server, "the header and the body name the same server")
			where[name] = placed{info.Server, info.Token}
			continue
		}
		info, err := srv.Create(ctx, name, client.FromWorkspace)
		require.NoError(t, err, name)
		where[name] = placed{info.Server, info.Token}
	}
	createRate := 30 / time.Since(began).Seconds()
	perServer := map[string][]string{}
	for name, p := range where {
		perServer[p.server] = append(perServer[p.server], name)
	}
	for _, s := range r.servers {
		assert.NotEmpty(t, perServer[s.id], "the hash spreads the sandboxes over every server: %v", perServer)
	}
	require.Len(t, perServer, 3, "only the three servers: %v", perServer)
	// A name taken is refused by the server the name hashes to.
	_, err = srv.Create(ctx, "sb-00", client.FromWorkspace)
	var he *client.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusConflict, he.StatusCode)
	assert.Equal(t, where["sb-00"].server, he.Server)

	// Each server lists its own (/pods/N/), and only those.
	for i, s := range r.servers {
		status, server, body := raw(t, ctx, http.MethodGet, fmt.Sprintf("%s/pods/%d/v1/sandboxes", base, i), r.token, nil, "")
		require.Equal(t, http.StatusOK, status, body)
		assert.Equal(t, s.id, server)
		var list apitype.SandboxList
		require.NoError(t, json.Unmarshal([]byte(body), &list))
		var names []string
		for _, sb := range list.Sandboxes {
			names = append(names, sb.Name)
			assert.Equal(t, s.id, sb.Server)
		}
		want := slices.Clone(perServer[s.id])
		sort.Strings(want)
		assert.Equal(t, want, names, "%s lists its sandboxes", s.id)
	}
	status, _, body := raw(t, ctx, http.MethodGet, base+"/v1/sandboxes", r.token, nil, "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body, "/pods/N/v1/sandboxes", "the router says where the lists are")

	// Calls and edits through the router, each reaching its server.
	for name, p := range where {
		sb := srv.Sandbox(name, p.token)
		require.NoError(t, sb.WriteString(ctx, "who.txt", "I am "+name+"\n"), name)
		_, err := sb.Edit(ctx, "who.txt", client.Edit{OldText: "I am", NewText: "this is"})
		require.NoError(t, err, name)
		res, err := sb.Run(ctx, "cat who.txt seed.txt")
		require.NoError(t, err, name)
		assert.Equal(t, "this is "+name+"\nseed\n", res.Stdout)
		status, server, body := raw(t, ctx, http.MethodPost, base+"/s/"+name+"/v1/tools/bash", p.token, nil, `{"command":"true"}`)
		assert.Equal(t, http.StatusOK, status, body)
		assert.Equal(t, p.server, server, "%s is reached on its server only", name)
	}
	// A name nobody made is a 404, and makes nothing.
	_, err = srv.Sandbox("nobody", "").Run(ctx, "true")
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusNotFound, he.StatusCode)
	assert.NotErrorIs(t, err, client.ErrSandboxUnavailable)
	status, _, _ = raw(t, ctx, http.MethodGet, base+"/v1/sandboxes/nobody/stats", r.token, nil, "")
	assert.Equal(t, http.StatusNotFound, status)

	// Kill boxsh-1: its sandboxes are unavailable, the others answer.
	killed := r.servers[1]
	killed.stop(t, syscall.SIGKILL)
	requireSocket(t, killed.sock) // stale: nothing accepts on it
	for name, p := range where {
		res, err := srv.Sandbox(name, p.token).Run(ctx, "cat who.txt")
		if p.server == killed.id {
			assert.ErrorIs(t, err, client.ErrSandboxUnavailable, "%s, on the killed server", name)
			continue
		}
		require.NoError(t, err, name)
		assert.Equal(t, "this is "+name+"\n", res.Stdout)
	}
	_, err = srv.Create(ctx, perServer[killed.id][0], client.FromWorkspace)
	assert.ErrorIs(t, err, client.ErrSandboxUnavailable, "a create for the killed server is not made elsewhere")

	// Started again on its state directory and socket (the one the kill
	// left, replaced): its sandboxes
	// answer with their files, once given a token (tokens are not kept).
	r.start(t, killed)
	for _, name := range perServer[killed.id] {
		_, err := srv.Sandbox(name, where[name].token).Run(ctx, "true")
		require.ErrorAs(t, err, &he, "the old token")
		assert.Equal(t, http.StatusUnauthorized, he.StatusCode)
		tok, err := srv.NewToken(ctx, name)
		require.NoError(t, err, name)
		res, err := srv.Sandbox(name, tok).Run(ctx, "cat who.txt")
		require.NoError(t, err, name)
		assert.Equal(t, "this is "+name+"\n", res.Stdout, "%s has its files again", name)
		where[name] = placed{killed.id, tok}
	}
	for _, s := range r.servers {
		if s != killed {
			assert.True(t, s.alive(), s.id)
			assert.Equal(t, pids[s.id], s.cmd.Process.Pid, "%s never stopped", s.id)
		}
	}

	// Figures (docs/perf.md): creates and calls through the router, and
	// straight to one server.
	direct := client.NewServer(r.servers[0].base(), r.token, nil)
	began = time.Now()
	for i := range 10 {
		name := fmt.Sprintf("direct-%d", i)
		_, err := direct.Create(ctx, name, client.FromWorkspace)
		require.NoError(t, err)
		t.Cleanup(func() { _ = direct.Delete(context.Background(), name) })
	}
	directRate := 10 / time.Since(began).Seconds()
	one := perServer[r.servers[0].id][0]
	timed := func(s *client.Server) []time.Duration {
		var lat []time.Duration
		for range 100 {
			t0 := time.Now()
			_, err := s.Sandbox(one, where[one].token).Run(ctx, "true")
			require.NoError(t, err)
			lat = append(lat, time.Since(t0))
		}
		return lat
	}
	routed, straight := timed(srv), timed(direct)
	t.Logf("creates/s: %.1f through the router (3 servers), %.1f straight to one; calls p50/p99: %v/%v through the router, %v/%v straight",
		createRate, directRate, percentile(routed, 50), percentile(routed, 99), percentile(straight, 50), percentile(straight, 99))

	// SIGTERM on boxsh-2 with a call in flight: the call finishes, then
	// the server stops; started again, its sandboxes have their files.
	term := r.servers[2]
	slow := perServer[term.id][0]
	answered := make(chan error, 1)
	var out *client.ExecResult
	go func() {
		var err error
		out, err = srv.Sandbox(slow, where[slow].token).Run(ctx, "sleep 1; echo finished")
		answered <- err
	}()
	waitFor(t, replyTimeout, "the call to run", func() bool {
		status, _, body := raw(t, ctx, http.MethodGet, base+"/pods/2/v1/sandboxes", r.token, nil, "")
		var list apitype.SandboxList
		if status != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil {
			return false
		}
		for _, sb := range list.Sandboxes {
			if sb.Name == slow && sb.Running > 0 {
				return true
			}
		}
		return false
	})
	term.stop(t, syscall.SIGTERM)
	_, err = os.Lstat(term.sock)
	assert.ErrorIs(t, err, os.ErrNotExist, "a server stopped by SIGTERM removes its socket")
	require.NoError(t, <-answered, "the call in flight at SIGTERM")
	assert.Equal(t, "finished\n", out.Stdout)
	assert.Equal(t, 128+int(syscall.SIGTERM), term.cmd.ProcessState.ExitCode(), "stopped by its signal:\n%s", term.stderr.String())
	_, err = srv.Sandbox(slow, where[slow].token).Run(ctx, "true")
	assert.ErrorIs(t, err, client.ErrSandboxUnavailable, "its server is down")
	r.start(t, term)
	tok, err := srv.NewToken(ctx, slow)
	require.NoError(t, err)
	res, err := srv.Sandbox(slow, tok).Run(ctx, "cat who.txt")
	require.NoError(t, err)
	assert.Equal(t, "this is "+slow+"\n", res.Stdout, "its files stayed")
}

// percentile is the p-th percentile of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(10 * time.Microsecond)
}

// A single-sandbox --listen server answers the probes too, without a
// token, and nothing else without one.
func TestDeployProbesSingle(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	h := startHTTP(t, ctx, "--sandbox")
	for _, path := range []string{"/healthz", "/readyz"} {
		status, _, body := raw(t, ctx, http.MethodGet, h.base+path, "", nil, "")
		assert.Equal(t, http.StatusOK, status, path)
		assert.Equal(t, "ok\n", body, path)
	}
	status, _, _ := raw(t, ctx, http.MethodPost, h.base+"/v1/tools/bash", "", nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusUnauthorized, status, "the tools take the token")
	status, _, _ = raw(t, ctx, http.MethodPost, h.base+"/v1/tools/bash", h.token, nil, `{"command":"true"}`)
	assert.Equal(t, http.StatusOK, status)
}
