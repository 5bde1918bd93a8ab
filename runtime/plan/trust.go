package plan

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/internal/initproto"
)

// The sandbox's trust store, when its proxy terminates TLS.
const (
	// TrustBundlePath is the host's roots and the proxy's CA.
	TrustBundlePath = initproto.BoxshDir + "/ca-certificates.crt"
	// TrustCAPath is the proxy's CA alone.
	TrustCAPath = initproto.BoxshDir + "/egress-ca.crt"
)

// trustVars name the bundle for the programs that read a variable for it:
// OpenSSL and Go, curl, git, Python's requests; Node.js adds its CA.
var trustVars = [][2]string{
	{"SSL_CERT_FILE", TrustBundlePath},
	{"CURL_CA_BUNDLE", TrustBundlePath},
	{"GIT_SSL_CAINFO", TrustBundlePath},
	{"REQUESTS_CA_BUNDLE", TrustBundlePath},
	{"NODE_EXTRA_CA_CERTS", TrustCAPath},
}

// withTrustEnv is env with the variables of trustVars replacing any of
// the same names.
func withTrustEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(trustVars, func(v [2]string) bool { return v[0] == name }) {
			out = append(out, kv)
		}
	}
	for _, v := range trustVars {
		out = append(out, v[0]+"="+v[1])
	}
	return out
}

// secretFilesDir holds the credentials files with stand-ins in the root.
const secretFilesDir = initproto.BoxshDir + "/secret-files"

// adjustSecretFiles shows the sandbox each of Config.SecretFiles, bound
// read-only on its path: the host's file, with stand-ins in the places of
// its credentials. A printed spec has no proxy, and gets none.
func (p *Plan) adjustSecretFiles(cfg Config, ann map[string]string) error {
	if !p.Proxy || cfg.Target == TargetPrint {
		return nil
	}
	for i, f := range cfg.SecretFiles {
		in := secretFilesDir + "/" + strconv.Itoa(i)
		p.Files = append(p.Files, File{Path: in, Content: f.Content})
		p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: f.Path, Type: "bind", Source: filepath.Join(cfg.Rootfs, in), Options: roBind(false)})
	}
	return nil
}

// adjustTrust gives the sandbox the proxy's CA to trust, when the proxy
// terminates TLS (Config.Trust).
//
// The root gets the bundle and the CA; the bundle is bound read-only on
// the host's bundle file, for the programs that read no variable. A
// printed spec has no proxy, and gets neither.
func (p *Plan) adjustTrust(cfg Config, ann map[string]string) error {
	t := cfg.Trust
	if t == nil || !p.Proxy || cfg.Target == TargetPrint {
		return nil
	}
	p.Files = append(p.Files, File{Path: TrustBundlePath, Content: t.Bundle}, File{Path: TrustCAPath, Content: t.CA})
	if t.Over != "" {
		p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: t.Over, Type: "bind", Source: filepath.Join(cfg.Rootfs, TrustBundlePath), Options: roBind(false)})
	}
	return nil
}
