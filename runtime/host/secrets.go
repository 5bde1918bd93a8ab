package host

import (
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/boxsh/boxsh/internal/front/credfile"
	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// Secrets are what a sandbox's secrets make: the proxy's, with their
// values and the CA it terminates TLS with; the variables of the
// sandbox's environment, with stand-ins; and what the sandbox trusts.
type Secrets struct {
	Proxy *proxy.Secrets
	// Requests are the policy's rules by method and path.
	Requests *proxy.RequestRules
	Env      []string
	Trust    *plan.Trust
	// Files are the credentials files with stand-ins, by path.
	Files []plan.File
}

// PrepareSecrets takes the values of p's secrets from getenv and makes a
// new stand-in for each, and a new CA, as one sandbox's start does.
func PrepareSecrets(p policy.Policy, getenv func(string) (string, bool)) (Secrets, error) {
	if len(p.Secrets) == 0 && len(p.SecretFiles) == 0 && len(p.Requests) == 0 {
		return Secrets{}, nil
	}
	if mode, _ := p.Network(); mode != policy.NetworkAllowlist {
		var what string
		switch {
		case len(p.Secrets) > 0:
			what = fmt.Sprintf("secret %s (%s)", p.Secrets[0].Env, p.Secrets[0].Source)
		case len(p.SecretFiles) > 0:
			what = fmt.Sprintf("secret file %s (%s)", p.SecretFiles[0].Path, p.SecretFiles[0].Source)
		default:
			what = fmt.Sprintf("request rule %q (%s)", p.Requests[0].Value, p.Requests[0].Source)
		}
		return Secrets{}, fmt.Errorf("%w: %s needs the allowlist network mode, not %s: the proxy applies it to requests", policy.ErrUsage, what, mode)
	}
	requests, err := proxy.NewRequestRules(policy.Values(p.Requests))
	if err != nil {
		return Secrets{}, fmt.Errorf("%w: %v", policy.ErrUsage, err)
	}
	var list []proxy.Secret
	var env []string
	for _, s := range p.Secrets {
		value, ok := getenv(s.Env)
		if !ok || value == "" {
			return Secrets{}, fmt.Errorf("%w: secret %s (%s): $%s is not set in boxsh's environment", policy.ErrUsage, s.Env, s.Source, s.Env)
		}
		standIn, err := proxy.NewStandIn(value)
		if err != nil {
			return Secrets{}, fmt.Errorf("%w: secret %s (%s): %v", policy.ErrUsage, s.Env, s.Source, err)
		}
		list = append(list, proxy.Secret{Name: s.Env, Value: value, StandIn: standIn, Hosts: s.Hosts, Headers: s.Headers})
		env = append(env, s.Env+"="+standIn)
	}
	var files []plan.File
	for _, f := range p.SecretFiles {
		content, err := readBounded(f.Path, maxSecretFile)
		if err != nil {
			return Secrets{}, fmt.Errorf("%w: secret file %s (%s): %v", policy.ErrUsage, f.Path, f.Source, err)
		}
		out, creds, err := credfile.Replace(f.Path, content, proxy.NewStandIn)
		if err != nil {
			return Secrets{}, fmt.Errorf("%w: secret file (%s): %v", policy.ErrUsage, f.Source, err)
		}
		for i, c := range creds {
			name := f.Path
			if len(creds) > 1 {
				name += "#" + strconv.Itoa(i+1)
			}
			list = append(list, proxy.Secret{Name: name, Value: c.Value, StandIn: c.StandIn, Hosts: f.Hosts})
		}
		files = append(files, plan.File{Path: f.Path, Content: out})
	}
	set, err := proxy.NewSecrets(list)
	if err != nil {
		return Secrets{}, fmt.Errorf("%w: %v", policy.ErrUsage, err)
	}
	if set.Roots, err = egressRoots(p.CAFiles); err != nil {
		return Secrets{}, err
	}
	if set.CA, err = proxy.NewCA("boxsh egress CA"); err != nil {
		return Secrets{}, err
	}
	trust := &plan.Trust{CA: set.CA.CertPEM()}
	if path, bundle, ok := hostBundle(); ok {
		trust.Over, trust.Bundle = path, append(append(bundle, '\n'), trust.CA...)
	} else {
		trust.Bundle = trust.CA
	}
	return Secrets{Proxy: set, Requests: requests, Env: env, Trust: trust, Files: files}, nil
}

// egressRoots are the host's roots and those of files, which verify the
// servers the proxy terminates TLS to.
func egressRoots(files []policy.Rule) (*x509.CertPool, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	for _, f := range files {
		b, err := readBounded(f.Value, maxBundle)
		if err != nil {
			return nil, fmt.Errorf("%w: CA file %s (%s): %v", policy.ErrUsage, f.Value, f.Source, err)
		}
		if !roots.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%w: CA file %s (%s): no PEM certificate in it", policy.ErrUsage, f.Value, f.Source)
		}
	}
	return roots, nil
}

// bundleFiles are where Linux systems keep their roots, as Go's crypto/x509
// looks for them.
var bundleFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// maxBundle bounds a bundle file read.
const maxBundle = 16 << 20

// maxSecretFile bounds a credentials file read.
const maxSecretFile = 1 << 20

// hostBundle is the host's bundle of roots: the first of bundleFiles that
// is a regular file, and its content.
func hostBundle() (string, []byte, bool) {
	for _, path := range bundleFiles {
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if b, err := readBounded(path, maxBundle); err == nil {
			return path, b, true
		}
	}
	return "", nil, false
}

// readBounded reads the regular file at path, at most max bytes.
//
// It opens path without blocking and without making it the controlling
// terminal, so that a FIFO or a device put in a file's place is refused
// rather than waited on; symbolic links are followed, as dotfile managers
// link these files.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return b, nil
}

// WithEnv is env with the variables of vars ("NAME=VALUE") replacing any
// of the same names.
func WithEnv(env, vars []string) []string {
	if len(vars) == 0 {
		return env
	}
	names := map[string]bool{}
	for _, kv := range vars {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	var out []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			out = append(out, kv)
		}
	}
	return append(out, vars...)
}
