// Package credfile finds the credentials in the files tools keep them in,
// and puts stand-ins in their place.
//
// It knows, by the file's name:
//   - .npmrc: the values of _authToken, _auth (base64 of user:password)
//     and _password (base64 of the password);
//   - .netrc (or _netrc): the words after password;
//   - .git-credentials: the password of each URL;
//   - config.json (Docker's): each auths entry's auth (base64 of
//     user:password), password and registrytoken; not identitytoken,
//     which goes in a request's body, where the proxy puts no value.
package credfile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// A Credential is a value found in a file, and the stand-in put there in
// its place.
type Credential struct {
	Value, StandIn string
}

// ErrUnknown refuses a file of a kind the package does not know.
var ErrUnknown = errors.New("not a credentials file boxsh knows (.npmrc, .netrc, .git-credentials, Docker's config.json)")

// Replace returns content, the file at path, with each credential in it
// replaced by a stand-in that newStandIn makes of it, and the credentials.
// A file with none is an error.
func Replace(path string, content []byte, newStandIn func(string) (string, error)) ([]byte, []Credential, error) {
	r := &replacer{newStandIn: newStandIn, made: map[string]string{}}
	var out []byte
	var err error
	switch name := filepath.Base(path); name {
	case ".npmrc":
		out, err = r.npmrc(content)
	case ".netrc", "_netrc":
		out, err = r.netrc(content)
	case ".git-credentials":
		out, err = r.gitCredentials(content)
	case "config.json":
		out, err = r.dockerConfig(content)
	default:
		return nil, nil, fmt.Errorf("%s: %w", path, ErrUnknown)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.found) == 0 {
		return nil, nil, fmt.Errorf("%s: no credential in it", path)
	}
	return out, r.found, nil
}

// replacer makes one stand-in per value.
type replacer struct {
	newStandIn func(string) (string, error)
	made       map[string]string
	found      []Credential
}

// standIn is value's stand-in, made once.
func (r *replacer) standIn(value string) (string, error) {
	if s, ok := r.made[value]; ok {
		return s, nil
	}
	s, err := r.newStandIn(value)
	if err != nil {
		return "", err
	}
	r.made[value] = s
	r.found = append(r.found, Credential{Value: value, StandIn: s})
	return s, nil
}

// basic is the stand-in of base64 b of "user:password" (or, with
// passwordOnly, of the password): the same encoding of the user and the
// password's stand-in.
func (r *replacer) basic(b string, passwordOnly bool) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(b)
	if err != nil {
		return "", fmt.Errorf("a base64 credential that does not decode: %w", err)
	}
	user, pass := "", string(raw)
	if !passwordOnly {
		var ok bool
		if user, pass, ok = strings.Cut(string(raw), ":"); !ok {
			return "", errors.New("a base64 credential that is not user:password")
		}
		user += ":"
	}
	s, err := r.standIn(pass)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString([]byte(user + s)), nil
}

// npmrcLine is a key = value line of .npmrc whose key ends in a
// credential's name; compiled at its first use, not at every start.
var npmrcLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\s*[^=#;]*:?(_authToken|_auth|_password)\s*=\s*)("?)([^"\s]+)("?)(\s*)$`)
})

func (r *replacer) npmrc(content []byte) ([]byte, error) {
	lines := strings.SplitAfter(string(content), "\n")
	for i, line := range lines {
		body, nl := strings.CutSuffix(line, "\n")
		m := npmrcLine().FindStringSubmatch(body)
		if m == nil || strings.HasPrefix(m[4], "${") {
			continue // not a credential, or a variable npm expands
		}
		var s string
		var err error
		switch m[2] {
		case "_authToken":
			s, err = r.standIn(m[4])
		case "_auth":
			s, err = r.basic(m[4], false)
		case "_password":
			s, err = r.basic(m[4], true)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		lines[i] = m[1] + m[3] + s + m[5] + m[6]
		if nl {
			lines[i] += "\n"
		}
	}
	return []byte(strings.Join(lines, "")), nil
}

// netrcPassword is a password and its value in a .netrc, compiled at its
// first use.
var netrcPassword = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\bpassword\s+)(\S+)`) })

func (r *replacer) netrc(content []byte) ([]byte, error) {
	var err error
	out := netrcPassword().ReplaceAllFunc(content, func(m []byte) []byte {
		sub := netrcPassword().FindSubmatch(m)
		s, e := r.standIn(string(sub[2]))
		if e != nil {
			err = e
			return m
		}
		return append(append([]byte(nil), sub[1]...), s...)
	})
	return out, err
}

func (r *replacer) gitCredentials(content []byte) ([]byte, error) {
	lines := bytes.SplitAfter(content, []byte("\n"))
	for i, line := range lines {
		text := strings.TrimRight(string(line), "\r\n")
		if text == "" {
			continue
		}
		u, err := url.Parse(text)
		if err != nil || u.User == nil {
			return nil, fmt.Errorf("line %d: expected https://USER:PASSWORD@HOST", i+1)
		}
		pass, ok := u.User.Password()
		if !ok || pass == "" {
			continue
		}
		s, err := r.standIn(pass)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		u.User = url.UserPassword(u.User.Username(), s)
		lines[i] = append([]byte(u.String()), line[len(text):]...)
	}
	return bytes.Join(lines, nil), nil
}

func (r *replacer) dockerConfig(content []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(content, &doc); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	var auths map[string]map[string]json.RawMessage
	if raw, ok := doc["auths"]; ok {
		if err := json.Unmarshal(raw, &auths); err != nil {
			return nil, fmt.Errorf("auths: %w", err)
		}
	}
	for host, entry := range auths {
		for key, raw := range entry {
			var v string
			if json.Unmarshal(raw, &v) != nil || v == "" {
				continue
			}
			var s string
			var err error
			switch key {
			case "auth":
				s, err = r.basic(v, false)
			case "registrytoken", "password":
				s, err = r.standIn(v)
			default:
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("auths[%q].%s: %w", host, key, err)
			}
			entry[key], _ = json.Marshal(s)
		}
	}
	if auths != nil {
		doc["auths"], _ = json.Marshal(auths)
	}
	return json.MarshalIndent(doc, "", "\t")
}
