package audit

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/boxsh/boxsh/internal/largecall"
	"github.com/boxsh/boxsh/internal/tool"
)

// Bounds of a summary: what is longer is cut, with its full size beside it.
const (
	// maxString bounds each string kept (a command, a path).
	maxString = 4096
	// maxArgv bounds the elements of args kept, maxArgString each one.
	maxArgv      = 64
	maxArgString = 1024
)

// verbatim are the argument members whose strings are kept (cut to
// maxString): what says what a call did, never what it wrote. Every other
// string, array and object is kept as its size only; numbers and booleans
// are kept.
var verbatim = []string{"command", "cwd", "path", "id", "signal", "encoding"}

// Summarize returns the summary of a call's arguments kept in the log.
// args is a JSON object the front has validated. The summary keeps:
//   - command, args, paths, ids, numbers and flags as given, with long
//     strings cut (NAME_bytes then holds the full size);
//   - env's names only;
//   - of file contents, stdin, edits and every other member, only their
//     size, in "sizes" (bytes of their JSON text).
//
// It never holds file contents or env values.
func Summarize(args json.RawMessage) map[string]any {
	members, ok := largecall.Members(args)
	if !ok {
		return nil
	}
	out := map[string]any{}
	sizes := map[string]int{}
	for _, m := range members {
		v := bytes.TrimSpace(m.Value)
		if len(v) == 0 {
			continue
		}
		switch {
		case m.Key == "env" && v[0] == '{':
			out["env"] = names(v)
		case m.Key == "args" && v[0] == '[':
			argv, full := argvOf(v)
			out["args"] = argv
			if full > 0 {
				out["args_count"] = full
			}
		case v[0] == '"' && slices.Contains(verbatim, m.Key):
			s, ok := m.String()
			if !ok {
				continue
			}
			if len(s) > maxString {
				out[m.Key+"_bytes"] = len(s)
				s = cut(s, maxString)
			}
			out[m.Key] = s
		case v[0] == 't' || v[0] == 'f':
			out[m.Key] = v[0] == 't'
		case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
			if f, err := strconv.ParseFloat(string(v), 64); err == nil {
				out[m.Key] = json.Number(strconv.FormatFloat(f, 'g', -1, 64))
			}
		case string(v) == "null":
		default:
			sizes[m.Key] = len(v)
		}
	}
	if len(sizes) > 0 {
		out["sizes"] = sizes
	}
	return out
}

// names are the member names of the JSON object v, sorted.
func names(v []byte) []string {
	ms, ok := largecall.Members(v)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, cut(m.Key, maxArgString))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// argvOf is the JSON array of strings v, each cut to maxArgString, the
// first maxArgv only; full is the length when it was longer, else 0.
func argvOf(v []byte) (argv []string, full int) {
	var all []string
	if json.Unmarshal(v, &all) != nil {
		return nil, 0
	}
	if len(all) > maxArgv {
		full = len(all)
		all = all[:maxArgv]
	}
	for i, s := range all {
		all[i] = cut(s, maxArgString)
	}
	return all, full
}

// cut shortens s to at most n bytes without splitting a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Outcome records in e the outcome of a call of tool name, whose result
// res is an encoded CallToolResult. It records whether the call failed.
// For a tool whose result starts with its exit code (bash, see
// tool.AuditRule.ExitCode and tool.EncodeStructured), it also records the
// exit code and whether the command timed out. It reads only the ends of
// res, which can be tens of megabytes.
func Outcome(e *Entry, name string, res []byte) {
	e.OutputBytes = int64(len(res))
	e.IsError = bytes.HasSuffix(bytes.TrimSpace(res), []byte(`,"isError":true}`))
	if in, ok := tool.Lookup(tool.SandboxSet, name); !ok || !in.Audit.ExitCode {
		return
	}
	const prefix = `{"content":[{"type":"text","text":"{\"exit_code\":`
	rest, ok := bytes.CutPrefix(res, []byte(prefix))
	if !ok {
		return
	}
	i := 0
	for i < len(rest) && i < 12 && (rest[i] == '-' || rest[i] >= '0' && rest[i] <= '9') {
		i++
	}
	code, err := strconv.Atoi(string(rest[:i]))
	if err != nil {
		return
	}
	e.ExitCode = &code
	// A timeout is exit code -1 with the signal that ended it (see
	// internal/toolhost/bash); the background start of a command answers 0.
	e.TimedOut = code == -1
}
