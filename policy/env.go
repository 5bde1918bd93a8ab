package policy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// baseEnv are the variables commands always get from boxsh's environment
// (a trailing "*" matches a prefix).
var baseEnv = []string{"PATH", "HOME", "LANG", "LC_*", "TERM", "TZ", "USER", "LOGNAME"}

// secretPatterns are the name patterns of variables that look like
// secrets: they are passed only when a rule names them exactly. "*" matches
// any run of characters; names are compared in upper case.
var secretPatterns = []string{
	"*TOKEN*", "*SECRET*", "*KEY*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*", "*PRIVATE*", "*SESSION*",
	"*_AUTH", "*_AUTH_*", "*COOKIE*", // SSH_AUTH_SOCK too: the ssh agent is a credential
	"AWS_*", "AZURE_*", "GOOGLE_APPLICATION_CREDENTIALS", "GCP_*", "CLOUDSDK_*", "DIGITALOCEAN_*",
	"*_PAT", "*_PAT_*", "*JWT*", "NPM_CONFIG__AUTH*", "DOCKER_AUTH_CONFIG", "VAULT_*", "OP_*",
}

// isSecretName tells whether the variable name looks like a secret.
func isSecretName(name string) bool {
	upper := strings.ToUpper(name)
	return slices.ContainsFunc(secretPatterns, func(p string) bool { return matchStars(p, upper) })
}

// matchStars matches s against pattern, where "*" matches any run of
// characters (including none) and everything else itself.
func matchStars(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// CommandEnv returns the environment commands get under p, from boxsh's own
// environment environ.
//
// It holds the base variables and those p passes, minus those that look like
// secrets unless a rule (or the base set) names them exactly, plus the
// variables p sets.
func CommandEnv(p Policy, environ []string) []string {
	var exact, prefixes []string
	for _, r := range append(Values(p.EnvPass), baseEnv...) {
		if prefix, ok := strings.CutSuffix(r, "*"); ok {
			prefixes = append(prefixes, prefix)
		} else {
			exact = append(exact, r)
		}
	}
	var env []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if _, set := p.EnvSet[name]; set {
			continue
		}
		switch {
		case slices.Contains(exact, name):
		case slices.ContainsFunc(prefixes, func(prefix string) bool { return strings.HasPrefix(name, prefix) }) && !isSecretName(name):
		default:
			continue
		}
		env = append(env, kv)
	}
	for _, name := range slices.Sorted(maps.Keys(p.EnvSet)) {
		env = append(env, name+"="+p.EnvSet[name].Value)
	}
	return env
}

// Withheld is what one prefix rule of environment.pass matched but CommandEnv
// leaves out, as looking like secrets. An example of such a rule is --env
// 'GITHUB_*'.
type Withheld struct {
	Rule  Rule
	Names []string
}

// WithheldEnv lists, by rule, the variables of environ that CommandEnv
// withholds as looking like secrets.
//
// These are variables a prefix rule of p matches and no rule names exactly.
func WithheldEnv(p Policy, environ []string) []Withheld {
	exact := append(Values(p.EnvPass), baseEnv...)
	var out []Withheld
	for _, r := range p.EnvPass {
		prefix, ok := strings.CutSuffix(r.Value, "*")
		if !ok {
			continue
		}
		w := Withheld{Rule: r}
		for _, kv := range environ {
			name, _, _ := strings.Cut(kv, "=")
			_, set := p.EnvSet[name]
			if strings.HasPrefix(name, prefix) && isSecretName(name) && !set && !slices.Contains(exact, name) {
				w.Names = append(w.Names, name)
			}
		}
		if len(w.Names) > 0 {
			slices.Sort(w.Names)
			out = append(out, w)
		}
	}
	return out
}

// Values are the values of rules rs.
func Values(rs []Rule) []string {
	vs := make([]string, len(rs))
	for i, r := range rs {
		vs[i] = r.Value
	}
	return vs
}

// ParseEnvFlag parses the value of --env.
//
//   - NAME passes the variable of boxsh's environment, as environment.pass
//     does. NAME* passes those it starts, except those that look like secrets.
//   - NAME=VALUE sets the variable, as environment.set does.
//
// An invalid name is an error that says why.
func ParseEnvFlag(v string) (Settings, error) {
	name, value, set := strings.Cut(v, "=")
	if set {
		if strings.HasSuffix(name, "*") || validateVarPattern(name) != nil {
			return Settings{}, fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", name)
		}
		if strings.ContainsRune(value, 0) {
			return Settings{}, errors.New("a value cannot hold a NUL byte")
		}
		return Settings{Environment: EnvironmentSettings{Set: map[string]string{name: value}}}, nil
	}
	if err := validateVarPattern(name); err != nil {
		return Settings{}, fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit; a trailing * matches a prefix)", name)
	}
	return Settings{Environment: EnvironmentSettings{Pass: []string{name}}}, nil
}
