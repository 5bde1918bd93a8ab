package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/boxsh/boxsh/internal/pathtree"
)

// Settings is the content of a policy settings file (JSON). Every field is
// optional; Load merges the files and the command line into a Policy.
type Settings struct {
	Filesystem  FilesystemSettings  `json:"filesystem,omitzero"`
	Environment EnvironmentSettings `json:"environment,omitzero"`
	Limits      LimitSettings       `json:"limits,omitzero"`
	Network     NetworkSettings     `json:"network,omitzero"`
}

// The network modes.
const (
	// NetworkDisabled: a network namespace with only loopback.
	NetworkDisabled = "disabled"
	// NetworkAllowAll: the host's network.
	NetworkAllowAll = "allow_all"
	// NetworkAllowlist: only loopback, and the allowed domains through
	// boxsh's proxy.
	NetworkAllowlist = "allowlist"
)

// NetworkSettings are the network rules of a sandbox.
type NetworkSettings struct {
	// Mode is disabled, allow_all or allowlist.
	Mode string `json:"mode,omitempty"`
	// AllowedDomains are what allowlist mode lets commands reach: exact
	// names and "*.example.com" wildcards, with an optional ":port".
	AllowedDomains []string `json:"allowedDomains,omitempty"`
	// DeniedDomains win over AllowedDomains.
	DeniedDomains []string `json:"deniedDomains,omitempty"`
	// Secrets are credentials the proxy puts in requests at egress, so
	// that the sandbox holds only stand-ins for them.
	Secrets []SecretSetting `json:"secrets,omitempty"`
	// SecretFiles are credentials files whose credentials are secrets so:
	// the sandbox sees each file with stand-ins in their places.
	SecretFiles []SecretFileSetting `json:"secretFiles,omitempty"`
	// Ask holds a request to a host on no list and asks the MCP client
	// on stdio about it, as --network-ask does.
	Ask bool `json:"ask,omitempty"`
	// CAFiles are PEM files of roots the proxy trusts besides the host's,
	// for the servers it terminates TLS to (a private registry's).
	CAFiles []string `json:"caFiles,omitempty"`
	// Requests are rules by method and path ("GET,HEAD
	// https://api.github.com/repos/acme/"): a host one names gets only the
	// requests its rules allow.
	Requests []string `json:"requests,omitempty"`
}

// SecretSetting is a credential taken from boxsh's environment and put in
// requests to some hosts only.
type SecretSetting struct {
	// Env names the variable of boxsh's environment that holds the value.
	// In the sandbox, the variable holds a stand-in.
	Env string `json:"env"`
	// Hosts are the domains the value is for, as in allowedDomains.
	Hosts []string `json:"hosts"`
	// Headers are request headers the value may go in, besides
	// Authorization.
	Headers []string `json:"headers,omitempty"`
}

// FilesystemSettings are the file rules. A rule is an absolute path, a
// path under the home directory ("~/.ssh"), a path relative to the
// project directory ("config/secrets.yaml"), or a name pattern without a
// slash that matches at any depth (".env", "*.pem").
type FilesystemSettings struct {
	// DenyRead are paths that cannot be read, even inside a bound
	// directory.
	DenyRead []string `json:"denyRead,omitempty"`
	// AllowRead punches holes in DenyRead.
	AllowRead []string `json:"allowRead,omitempty"`
	// AllowWrite are the paths that become writable binds.
	AllowWrite []string `json:"allowWrite,omitempty"`
	// DenyWrite are paths that stay read-only inside a writable area.
	DenyWrite []string `json:"denyWrite,omitempty"`
	// Protect are entries added to the protected list (see IsProtected).
	// They are names or relative paths matched at any depth, directories
	// when they end in "/". They are kept read-only in every writable area, and
	// cannot be created at the root of each writable bind. The built-in
	// list cannot be shortened.
	Protect []string `json:"protect,omitempty"`
}

// EnvironmentSettings shape the environment commands get.
type EnvironmentSettings struct {
	// Pass names variables of boxsh's environment that commands get
	// besides the base set (PATH, HOME, LANG, TERM, USER). A trailing "*"
	// matches a prefix. Variables that look like secrets are passed only
	// when named exactly.
	Pass []string `json:"pass,omitempty"`
	// Set are variables set for every command.
	Set map[string]string `json:"set,omitempty"`
}

// LimitSettings are the resource limits of the sandbox.
type LimitSettings struct {
	// Memory is the memory limit, in bytes or with a K, M or G suffix.
	Memory string `json:"memory,omitempty"`
	// Pids is the most processes the sandbox may run at once.
	Pids int `json:"pids,omitempty"`
	// CPUs is the processor time the sandbox may use, in cores.
	CPUs float64 `json:"cpus,omitempty"`
	// TimeoutDefault is the bash tool's timeout, in seconds, when a call
	// gives none.
	TimeoutDefault float64 `json:"timeoutDefault,omitempty"`
	// MaxOutput caps each output stream of a bash call, in bytes.
	MaxOutput int64 `json:"maxOutput,omitempty"`
}

// Source names where a rule or setting came from: "default", a file's
// path, or a command-line flag.
type Source string

// sourceDefault marks the built-in defaults.
const sourceDefault Source = "default"

// Rule is one file rule, or one passed variable, with its source.
type Rule struct {
	Value  string `json:"value"`
	Source Source `json:"source"`
}

// SecretFileSetting is a credentials file (.npmrc, .netrc,
// .git-credentials, Docker's config.json) whose credentials are for some
// hosts only.
type SecretFileSetting struct {
	// Path is the file's absolute path, on the host and in the sandbox.
	Path string `json:"path"`
	// Hosts are the domains its credentials are for, as in allowedDomains.
	Hosts []string `json:"hosts"`
}

// SecretFile is a secret file of the policy, with its source.
type SecretFile struct {
	SecretFileSetting
	Source Source `json:"source"`
}

// Secret is a secret of the policy, with its source. It names the
// variable that holds the value, never the value.
type Secret struct {
	SecretSetting
	Source Source `json:"source"`
}

// Value is a setting with its source; Source is empty when it is not set.
type Value[T any] struct {
	Value  T      `json:"value"`
	Source Source `json:"source,omitempty"`
}

// Set tells whether the value was set anywhere.
func (v Value[T]) Set() bool { return v.Source != "" }

// Policy is the merged policy: the defaults, the settings files and the
// command line, each rule with its source.
type Policy struct {
	DenyRead   []Rule `json:"denyRead"`
	AllowRead  []Rule `json:"allowRead"`
	AllowWrite []Rule `json:"allowWrite"`
	DenyWrite  []Rule `json:"denyWrite"`
	Protect    []Rule `json:"protect,omitempty"`

	EnvPass []Rule                   `json:"envPass"`
	EnvSet  map[string]Value[string] `json:"envSet"`

	Memory         Value[int64]   `json:"memory"`
	Pids           Value[int]     `json:"pids"`
	CPUs           Value[float64] `json:"cpus"`
	TimeoutDefault Value[float64] `json:"timeoutDefault"`
	MaxOutput      Value[int64]   `json:"maxOutput"`

	NetworkMode    Value[string] `json:"networkMode"`
	AllowedDomains []Rule        `json:"allowedDomains"`
	DeniedDomains  []Rule        `json:"deniedDomains"`
	Secrets        []Secret      `json:"secrets,omitempty"`
	SecretFiles    []SecretFile  `json:"secretFiles,omitempty"`
	NetworkAsk     Value[bool]   `json:"networkAsk"`
	CAFiles        []Rule        `json:"caFiles,omitempty"`
	Requests       []Rule        `json:"requests,omitempty"`

	// Files are the settings files that were read, in merge order.
	Files []string `json:"files"`
	// Untrusted are the settings files that could only narrow the policy,
	// and what of theirs was ignored.
	Untrusted []UntrustedFile `json:"untrusted,omitempty"`
}

// UntrustedFile is a settings file that a sandbox could have written and the
// user has not trusted.
//
// It is the project's file, or a --policy file in a writable bind. It can only
// narrow the policy.
type UntrustedFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Ignored are its settings that would have widened the policy, each
	// as "key value".
	Ignored []string `json:"ignored,omitempty"`
	// Untrustable says why it cannot be trusted (a symbolic link).
	Untrustable string `json:"untrustable,omitempty"`
}

// DefaultSettings are the settings `boxsh policy init` writes and every
// policy starts from: reads of common secrets are denied.
func DefaultSettings() Settings {
	return Settings{Filesystem: FilesystemSettings{DenyRead: slices.Clone(defaultDenyRead)}}
}

var defaultDenyRead = []string{
	".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa", "id_ed25519", "id_ecdsa",
	"~/.ssh", "~/.aws", "~/.gnupg", "~/.azure", "~/.kube", "~/.docker/config.json",
	"~/.config/gcloud", "~/.config/gh", "~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.pypirc",
}

// GlobalSettingsPath is the user's settings file: policy.json in
// ConfigDir.
func GlobalSettingsPath(home string) string {
	return filepath.Join(ConfigDir(home), "policy.json")
}

// ProjectSettingsPath is the project's settings file, under dir (the
// working directory).
func ProjectSettingsPath(dir string) string {
	return filepath.Join(dir, ".boxsh", "policy.json")
}

// ReadSettings reads a settings file strictly.
//
// Unknown keys and values of the wrong type are errors that name the file, the
// key and what is expected.
func ReadSettings(path string) (Settings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Settings{}, fmt.Errorf("policy %s: %w", path, err)
	}
	return parseSettings(path, b)
}

// parseSettings parses the settings file content b, read from name.
func parseSettings(name string, b []byte) (Settings, error) {
	var s Settings
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Settings{}, fmt.Errorf("policy %s: %s", name, describeJSONError(b, err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Settings{}, fmt.Errorf("policy %s: unexpected content after the settings object", name)
	}
	if err := s.validate(); err != nil {
		return Settings{}, fmt.Errorf("policy %s: %w", name, err)
	}
	return s, nil
}

// describeJSONError turns a decoding error into a message that names the
// key and what is expected, with the line.
func describeJSONError(b []byte, err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return fmt.Sprintf("line %d: %s: expected %s, got %s", lineOf(b, typeErr.Offset), typeErr.Field, describeType(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("line %d: invalid JSON: %v", lineOf(b, syntaxErr.Offset), syntaxErr)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		key := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return fmt.Sprintf("unknown key %s (known: filesystem.denyRead, filesystem.allowRead, filesystem.allowWrite, filesystem.denyWrite, filesystem.protect, environment.pass, environment.set, limits.memory, limits.pids, limits.cpus, limits.timeoutDefault, limits.maxOutput, network.mode, network.allowedDomains, network.deniedDomains)", key)
	case errors.Is(err, io.EOF):
		return "empty file: expected a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("line %d: invalid JSON: unexpected end of file", lineOf(b, int64(len(b))))
	}
	return err.Error()
}

func describeType(t string) string {
	switch t {
	case "[]string":
		return "a list of strings"
	case "map[string]string":
		return "an object of strings"
	case "string":
		return "a string"
	case "int", "int64":
		return "a whole number"
	case "float64":
		return "a number"
	case "policy.Settings", "policy.FilesystemSettings", "policy.EnvironmentSettings", "policy.LimitSettings", "policy.NetworkSettings":
		return "an object"
	}
	return t
}

func lineOf(b []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(b)))
	return bytes.Count(b[:offset], []byte("\n")) + 1
}

// Restricts tells whether s has file rules or network settings.
//
// Only a sandbox enforces those, so a --policy file with them turns the
// sandbox on.
func (s Settings) Restricts() bool {
	fs, n := s.Filesystem, s.Network
	return len(fs.DenyRead)+len(fs.AllowRead)+len(fs.AllowWrite)+len(fs.DenyWrite)+len(fs.Protect) > 0 ||
		n.Mode != "" || n.Ask || len(n.AllowedDomains)+len(n.DeniedDomains)+len(n.Secrets)+len(n.SecretFiles)+len(n.Requests) > 0
}

// validate checks the values a JSON type does not.
func (s Settings) validate() error {
	fs := s.Filesystem
	for _, list := range []struct {
		key   string
		rules []string
	}{
		{"filesystem.denyRead", fs.DenyRead}, {"filesystem.allowRead", fs.AllowRead},
		{"filesystem.allowWrite", fs.AllowWrite}, {"filesystem.denyWrite", fs.DenyWrite},
	} {
		key := list.key
		for _, r := range list.rules {
			if err := validateRule(r); err != nil {
				return fmt.Errorf("%s: %q: %w", key, r, err)
			}
		}
	}
	for _, e := range fs.Protect {
		if err := validateProtect(e); err != nil {
			return fmt.Errorf("filesystem.protect: %q: %w", e, err)
		}
	}
	for _, name := range s.Environment.Pass {
		if err := validateVarPattern(name); err != nil {
			return fmt.Errorf("environment.pass: %q: %w", name, err)
		}
	}
	for name := range s.Environment.Set {
		if err := validateVarPattern(name); err != nil || strings.HasSuffix(name, "*") {
			return fmt.Errorf("environment.set: %q: expected a variable name", name)
		}
	}
	switch s.Network.Mode {
	case "", NetworkDisabled, NetworkAllowAll, NetworkAllowlist:
	default:
		return fmt.Errorf("network.mode: expected disabled, allow_all or allowlist, got %q", s.Network.Mode)
	}
	for _, list := range []struct {
		key     string
		domains []string
	}{{"network.allowedDomains", s.Network.AllowedDomains}, {"network.deniedDomains", s.Network.DeniedDomains}} {
		key := list.key
		for _, d := range list.domains {
			if d == "" || strings.ContainsAny(d, " /\t") {
				return fmt.Errorf("%s: %q: expected a domain name such as registry.npmjs.org or *.example.com, with an optional :port", key, d)
			}
		}
	}
	for _, r := range s.Network.Requests {
		if methods, u, ok := strings.Cut(strings.TrimSpace(r), " "); !ok || methods == "" || !strings.Contains(u, "://") {
			return fmt.Errorf("network.requests: %q: expected METHODS URL, such as \"GET,HEAD https://api.github.com/repos/acme/\"", r)
		}
	}
	for _, f := range s.Network.SecretFiles {
		if !filepath.IsAbs(f.Path) {
			return fmt.Errorf("network.secretFiles: path %q: expected an absolute path", f.Path)
		}
		if len(f.Hosts) == 0 {
			return fmt.Errorf("network.secretFiles: %s: hosts: name the domains its credentials are for", f.Path)
		}
		for _, d := range f.Hosts {
			if d == "" || strings.ContainsAny(d, " /\t") {
				return fmt.Errorf("network.secretFiles: %s: hosts: %q: expected a domain name such as registry.npmjs.org or *.example.com, with an optional :port", f.Path, d)
			}
		}
	}
	for _, f := range s.Network.CAFiles {
		if !filepath.IsAbs(f) {
			return fmt.Errorf("network.caFiles: %q: expected an absolute path", f)
		}
	}
	for _, sec := range s.Network.Secrets {
		if err := validateVarPattern(sec.Env); err != nil || strings.HasSuffix(sec.Env, "*") {
			return fmt.Errorf("network.secrets: env %q: expected a variable name", sec.Env)
		}
		if len(sec.Hosts) == 0 {
			return fmt.Errorf("network.secrets: %s: hosts: name the domains the secret is for", sec.Env)
		}
		for _, d := range sec.Hosts {
			if d == "" || strings.ContainsAny(d, " /\t") {
				return fmt.Errorf("network.secrets: %s: hosts: %q: expected a domain name such as api.github.com or *.example.com, with an optional :port", sec.Env, d)
			}
		}
		for _, h := range sec.Headers {
			if h == "" || strings.ContainsAny(h, " :\t\r\n") {
				return fmt.Errorf("network.secrets: %s: headers: %q: expected a header name", sec.Env, h)
			}
		}
	}
	l := s.Limits
	if l.Memory != "" {
		if _, err := ParseSize(l.Memory); err != nil {
			return fmt.Errorf("limits.memory: %w", err)
		}
	}
	if l.Pids < 0 {
		return fmt.Errorf("limits.pids: expected a positive number, got %d", l.Pids)
	}
	if l.CPUs < 0 {
		return fmt.Errorf("limits.cpus: expected a positive number, got %g", l.CPUs)
	}
	if l.TimeoutDefault < 0 {
		return fmt.Errorf("limits.timeoutDefault: expected a positive number of seconds, got %g", l.TimeoutDefault)
	}
	if l.MaxOutput < 0 {
		return fmt.Errorf("limits.maxOutput: expected a positive number of bytes, got %d", l.MaxOutput)
	}
	return nil
}

func validateRule(r string) error {
	switch {
	case r == "":
		return errors.New("empty path")
	case strings.ContainsRune(r, 0):
		return errors.New("NUL in path")
	case r == "/" || r == "~" || r == "~/" || r == "*":
		return errors.New("too broad: it would cover everything")
	case strings.HasPrefix(r, "~") && !strings.HasPrefix(r, "~/"):
		return errors.New(`only "~/" is expanded (to the home directory)`)
	}
	if _, err := filepath.Match(r, ""); err != nil {
		return fmt.Errorf("bad pattern: %w", err)
	}
	return nil
}

// validateProtect checks an entry of filesystem.protect: a name or a
// relative path without empty, "." or ".." components.
func validateProtect(e string) error {
	if strings.ContainsRune(e, 0) || strings.ContainsAny(e, "*?[\\") {
		return errors.New("expected a name or a relative path (no patterns)")
	}
	if strings.HasPrefix(e, "/") || strings.HasPrefix(e, "~") {
		return errors.New("expected a name or a relative path, matched at any depth (for an absolute path use denyWrite)")
	}
	for _, c := range strings.Split(strings.TrimSuffix(e, "/"), "/") {
		if c == "" || c == "." || c == ".." {
			return errors.New("expected a name or a relative path without empty, . or .. components")
		}
	}
	return nil
}

func validateVarPattern(name string) error {
	n := strings.TrimSuffix(name, "*")
	if n == "" {
		return errors.New("expected a variable name (a trailing * matches a prefix)")
	}
	for i, c := range n {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return errors.New("expected a variable name (a trailing * matches a prefix)")
		}
	}
	return nil
}

// ParseSize parses a size in bytes, with an optional K, M, G or T suffix.
//
// The suffixes are powers of 1024. A trailing "B" or "iB" is accepted.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			mult = 1 << (10 * (i + 1))
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("expected a size such as 512M or 2G, got %q", s)
	}
	return int64(v * float64(mult)), nil
}

// Merger builds a Policy from the defaults, settings files and flags, in that
// order.
//
// Lists accumulate; single values are replaced by later ones.
type Merger struct {
	p Policy
}

// NewMerger starts from the default settings.
func NewMerger() *Merger {
	m := &Merger{p: Policy{EnvSet: map[string]Value[string]{}}}
	m.Add(DefaultSettings(), sourceDefault)
	return m
}

// Add merges settings s from source.
func (m *Merger) Add(s Settings, source Source) {
	add := func(dst *[]Rule, values []string) {
		for _, v := range values {
			if !slices.ContainsFunc(*dst, func(r Rule) bool { return r.Value == v }) {
				*dst = append(*dst, Rule{Value: v, Source: source})
			}
		}
	}
	fs := s.Filesystem
	add(&m.p.DenyRead, fs.DenyRead)
	add(&m.p.AllowRead, fs.AllowRead)
	add(&m.p.AllowWrite, fs.AllowWrite)
	add(&m.p.DenyWrite, fs.DenyWrite)
	add(&m.p.Protect, fs.Protect)
	add(&m.p.EnvPass, s.Environment.Pass)
	add(&m.p.AllowedDomains, s.Network.AllowedDomains)
	add(&m.p.DeniedDomains, s.Network.DeniedDomains)
	add(&m.p.CAFiles, s.Network.CAFiles)
	add(&m.p.Requests, s.Network.Requests)
	for _, f := range s.Network.SecretFiles {
		m.p.SecretFiles = slices.DeleteFunc(m.p.SecretFiles, func(o SecretFile) bool { return o.Path == f.Path })
		m.p.SecretFiles = append(m.p.SecretFiles, SecretFile{SecretFileSetting: f, Source: source})
	}
	for _, sec := range s.Network.Secrets {
		// A later setting of the same variable replaces the earlier one.
		m.p.Secrets = slices.DeleteFunc(m.p.Secrets, func(o Secret) bool { return o.Env == sec.Env })
		m.p.Secrets = append(m.p.Secrets, Secret{SecretSetting: sec, Source: source})
	}
	if s.Network.Ask {
		m.p.NetworkAsk = Value[bool]{true, source}
	}
	if s.Network.Mode != "" {
		m.p.NetworkMode = Value[string]{s.Network.Mode, source}
	}
	for k, v := range s.Environment.Set {
		m.p.EnvSet[k] = Value[string]{v, source}
	}
	l := s.Limits
	if l.Memory != "" {
		n, _ := ParseSize(l.Memory) // validated
		m.p.Memory = Value[int64]{n, source}
	}
	if l.Pids > 0 {
		m.p.Pids = Value[int]{l.Pids, source}
	}
	if l.CPUs > 0 {
		m.p.CPUs = Value[float64]{l.CPUs, source}
	}
	if l.TimeoutDefault > 0 {
		m.p.TimeoutDefault = Value[float64]{l.TimeoutDefault, source}
	}
	if l.MaxOutput > 0 {
		m.p.MaxOutput = Value[int64]{l.MaxOutput, source}
	}
}

// Policy returns the merged policy.
func (m *Merger) Policy() Policy { return m.p }

// FlagSettings are settings given on the command line by one flag.
type FlagSettings struct {
	Flag     string
	Settings Settings
}

// LoadConfig says where Load finds the settings.
type LoadConfig struct {
	// Home is the user's home directory (for the global file and the
	// trust store; empty: neither).
	Home string
	// Dir is the working directory, whose ./.boxsh/policy.json is the
	// project's file.
	Dir string
	// PolicyFile is --policy (empty: none).
	PolicyFile string
	// Flags are the policy flags, in order.
	Flags []FlagSettings
	// Writable tells whether a sandbox could write the host path, because
	// a wr bind or a cow destination shows it. nil means none can. A
	// --policy file that a sandbox could write is treated as the project's
	// file is.
	Writable func(path string) bool
}

// Load merges the user's settings and the settings a sandbox could have
// written into a Policy.
//
// The user's settings are the defaults, the global settings file, the --policy
// file and the flags, in that order. The settings a sandbox could have written
// are the project's file, and a --policy file inside a writable bind. Those
// can only narrow the user's policy, unless the trust store names them with
// their current content. Trusted ones merge in the order above, the project's
// after the global file. The Policy's Untrusted lists what the others could
// not change.
func Load(cfg LoadConfig) (Policy, error) {
	m := NewMerger()
	var store *TrustStore
	trusted := func(sf SettingsFile) (bool, error) {
		if sf.Key == "" || cfg.Home == "" {
			return false, nil
		}
		if store == nil {
			t, err := LoadTrustStore(TrustStorePath(cfg.Home))
			if err != nil {
				return false, err
			}
			store = &t
		}
		return store.trusts(sf.Key, sf.SHA256), nil
	}
	type file struct {
		sf SettingsFile
		s  Settings
	}
	var later []file
	// read reads path; with mustTrust, one that is not trusted is kept for
	// later. It reports whether the file exists.
	read := func(path string, optional, mustTrust bool) error {
		sf, err := ReadSettingsFile(path)
		if err != nil {
			if optional && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		s, err := parseSettings(path, sf.Content)
		if err != nil {
			return err
		}
		if mustTrust {
			ok, err := trusted(sf)
			if err != nil {
				return err
			}
			if !ok {
				later = append(later, file{sf, s})
				return nil
			}
		}
		m.Add(s, Source(path))
		m.p.Files = append(m.p.Files, path)
		return nil
	}
	if cfg.Home != "" {
		if err := read(GlobalSettingsPath(cfg.Home), true, false); err != nil {
			return Policy{}, err
		}
	}
	if err := read(ProjectSettingsPath(cfg.Dir), true, true); err != nil {
		return Policy{}, err
	}
	if cfg.PolicyFile != "" {
		exposed := false
		if cfg.Writable != nil {
			abs, err := filepath.Abs(cfg.PolicyFile)
			if err != nil {
				return Policy{}, err
			}
			real, err := filepath.EvalSymlinks(abs)
			if err != nil {
				real = abs
			}
			exposed = cfg.Writable(abs) || cfg.Writable(real) ||
				slices.ContainsFunc(m.p.AllowWrite, func(r Rule) bool {
					w := allowWritePath(r.Value, cfg.Home, cfg.Dir)
					return pathtree.Within(abs, w) || pathtree.Within(real, w)
				})
		}
		if err := read(cfg.PolicyFile, false, exposed); err != nil {
			return Policy{}, err
		}
	}
	for _, f := range cfg.Flags {
		m.Add(f.Settings, Source(f.Flag))
	}
	for _, f := range later {
		ignored := m.addNarrowing(f.s, Source(f.sf.Path))
		m.p.Files = append(m.p.Files, f.sf.Path)
		u := UntrustedFile{Path: f.sf.Path, SHA256: f.sf.SHA256, Ignored: ignored, Untrustable: f.sf.Untrustable}
		m.p.Untrusted = append(m.p.Untrusted, u)
	}
	return m.p, nil
}

// allowWritePath is the host path an allowWrite rule makes writable
// (runtime.AllowWriteBinds resolves it the same way).
func allowWritePath(rule, home, dir string) string {
	switch {
	case strings.HasPrefix(rule, "~/"):
		return filepath.Join(home, rule[2:])
	case filepath.IsAbs(rule):
		return filepath.Clean(rule)
	}
	return filepath.Join(dir, rule)
}

// MarshalSettings encodes settings as an indented JSON file.
func MarshalSettings(s Settings) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Network returns the network mode of p, and whether a sandbox needs a network
// namespace of its own for it.
//
// The mode is allowlist when none is set but domains are allowed or the
// client is to be asked, else allow_all.
func (p Policy) Network() (mode string, ownNamespace bool) {
	mode = p.NetworkMode.Value
	if mode == "" {
		mode = NetworkAllowAll
		if len(p.AllowedDomains) > 0 || p.NetworkAsk.Value {
			mode = NetworkAllowlist
		}
	}
	return mode, mode != NetworkAllowAll
}
