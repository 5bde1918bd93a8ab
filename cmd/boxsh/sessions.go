package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxsh/boxsh/client/session"
	"github.com/boxsh/boxsh/internal/bytesize"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/host"
)

const sessionUsage = `Usage: boxsh changes DST [--json]     List the changes of a copy-on-write session.
       boxsh diff DST [PATH]           Unified diff of its changes (at PATH).
       boxsh apply DST [--dry-run] [--json] [PATH...]
                                       Write its changes into SRC: deletions too,
                                       each file atomically; paths the host changed
                                       since the session started (conflicts) and
                                       protected paths (with the policy's
                                       filesystem.protect) are not applied.
       boxsh discard DST               Remove the session (SRC is not touched).
       boxsh sessions [--base DIR]     List the sessions, with their age and size.

DST is the directory of the session's changes: the work directory that --try
announces (.boxsh-try-XXXXXX/work), or a session of the Go session.
Exit status: 0, 1 on failure, 3 when apply left changes out.
`

// sessionArgs splits args into flags (the names in flags) and the rest.
func sessionArgs(args []string, flags ...string) (map[string]string, []string, error) {
	set := map[string]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			rest = append(rest, a)
			continue
		}
		name, value, hasValue := strings.Cut(a, "=")
		known := false
		for _, f := range flags {
			if strings.TrimSuffix(f, "=") == name {
				known = true
				if strings.HasSuffix(f, "=") && !hasValue {
					if i+1 >= len(args) {
						return nil, nil, fmt.Errorf("%s needs a value", name)
					}
					i++
					value = args[i]
				}
				set[name] = value
			}
		}
		if !known {
			return nil, nil, fmt.Errorf("unknown option %s", a)
		}
	}
	return set, rest, nil
}

// sessionFail prints a session command's error.
func sessionFail(stderr io.Writer, err error) int {
	// The error may name a path the sandbox chose.
	fmt.Fprintf(stderr, "boxsh: %s\n", session.EscapeControls(err.Error()))
	if strings.Contains(err.Error(), "unknown option") || strings.Contains(err.Error(), "expected") {
		return 2
	}
	return 1
}

// openSessionArg opens the session named by the first argument.
func openSessionArg(rest []string) (*session.Session, []string, error) {
	if len(rest) == 0 {
		return nil, nil, fmt.Errorf("expected the session's DST directory")
	}
	s, err := session.Open(rest[0])
	return s, rest[1:], err
}

func runChanges(args []string, stdout, stderr io.Writer) int {
	flags, rest, err := sessionArgs(args, "--json")
	if err != nil {
		return sessionFail(stderr, err)
	}
	s, rest, err := openSessionArg(rest)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("unexpected argument %q: expected boxsh changes DST", rest[0])
	}
	if err != nil {
		return sessionFail(stderr, err)
	}
	cs, err := s.Changes()
	if err != nil {
		return sessionFail(stderr, err)
	}
	if _, ok := flags["--json"]; ok {
		if cs == nil {
			cs = []session.Change{}
		}
		return writeJSON(stdout, stderr, cs)
	}
	for _, c := range cs {
		fmt.Fprintln(stdout, c)
	}
	return 0
}

func runDiff(args []string, stdout, stderr io.Writer) int {
	_, rest, err := sessionArgs(args)
	if err != nil {
		return sessionFail(stderr, err)
	}
	s, rest, err := openSessionArg(rest)
	if err == nil && len(rest) > 1 {
		err = fmt.Errorf("unexpected argument %q: expected boxsh diff DST [PATH]", rest[1])
	}
	if err != nil {
		return sessionFail(stderr, err)
	}
	path := ""
	if len(rest) == 1 {
		path = rest[0]
	}
	d, err := s.Diff(path)
	if err != nil {
		return sessionFail(stderr, err)
	}
	fmt.Fprint(stdout, d)
	return 0
}

func runApply(args []string, stdout, stderr io.Writer) int {
	flags, rest, err := sessionArgs(args, "--dry-run", "--json")
	if err != nil {
		return sessionFail(stderr, err)
	}
	s, paths, err := openSessionArg(rest)
	if err != nil {
		return sessionFail(stderr, err)
	}
	_, dry := flags["--dry-run"]
	// The policy of SRC's project (and the user's) may protect more.
	p, err := policy.Load(policy.LoadConfig{Home: os.Getenv("HOME"), Dir: s.Src()})
	if err != nil {
		return sessionFail(stderr, fmt.Errorf("apply: the policy's filesystem.protect: %w", err))
	}
	res, err := s.Apply(session.ApplyOptions{DryRun: dry, Paths: paths, Protect: host.ProtectEntries(p)})
	if err != nil {
		return sessionFail(stderr, err)
	}
	refused := len(res.Conflicts) + len(res.Skipped) + len(res.Failed)
	if _, ok := flags["--json"]; ok {
		if code := writeJSON(stdout, stderr, res); code != 0 {
			return code
		}
	} else {
		verb := "applied"
		if dry {
			verb = "would apply"
		}
		for _, c := range res.Applied {
			fmt.Fprintf(stdout, "%s %s\n", verb, c)
		}
		for _, r := range res.Narrowed {
			fmt.Fprintf(stdout, "narrowed %s: %s\n", r.Change, session.EscapeControls(r.Reason))
		}
		for _, list := range []struct {
			what string
			rs   []session.Refusal
		}{{"conflict", res.Conflicts}, {"skipped", res.Skipped}, {"failed", res.Failed}} {
			for _, r := range list.rs {
				fmt.Fprintf(stdout, "%s %s: %s\n", list.what, r.Change, session.EscapeControls(r.Reason))
			}
		}
		fmt.Fprintf(stderr, "boxsh: %s %d change(s) to %s; %d conflict(s), %d skipped, %d failed\n",
			verb, len(res.Applied), session.QuotePath(s.Src()), len(res.Conflicts), len(res.Skipped), len(res.Failed))
	}
	if refused > 0 {
		return 3
	}
	return 0
}

func runDiscard(args []string, stdout, stderr io.Writer) int {
	_, rest, err := sessionArgs(args)
	if err != nil {
		return sessionFail(stderr, err)
	}
	s, rest, err := openSessionArg(rest)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("unexpected argument %q: expected boxsh discard DST", rest[0])
	}
	if err == nil && s.OwnerAlive() && s.Info().OwnerPID != os.Getpid() {
		err = fmt.Errorf("session %s is in use by process %d", s.Dst(), s.Info().OwnerPID)
	}
	if err == nil {
		err = s.Discard()
	}
	if err != nil {
		return sessionFail(stderr, err)
	}
	fmt.Fprintf(stderr, "boxsh: discarded %s\n", session.QuotePath(s.Dst()))
	return 0
}

func runSessions(args []string, stdout, stderr io.Writer) int {
	flags, rest, err := sessionArgs(args, "--base=", "--json")
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("unexpected argument %q: expected boxsh sessions [--base DIR]", rest[0])
	}
	if err != nil {
		return sessionFail(stderr, err)
	}
	ss, err := knownSessions(flags["--base"])
	if err != nil {
		return sessionFail(stderr, err)
	}
	type row struct {
		Dst     string    `json:"dst"`
		Src     string    `json:"src"`
		Started time.Time `json:"started"`
		Size    int64     `json:"size"`
		Running bool      `json:"running"`
		Label   string    `json:"label,omitempty"`
	}
	rows := []row{}
	for _, s := range ss {
		rows = append(rows, row{s.Dst(), s.Src(), s.Info().Started, s.Size(), s.OwnerAlive(), s.Info().Label})
	}
	if _, ok := flags["--json"]; ok {
		return writeJSON(stdout, stderr, rows)
	}
	for _, r := range rows {
		state := "ended"
		if r.Running {
			state = "running"
		}
		label := ""
		if r.Label != "" {
			label = "\t" + session.EscapeControls(r.Label)
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\tsrc %s%s\n", session.QuotePath(r.Dst), age(time.Since(r.Started)), bytesize.Format(r.Size), state, session.QuotePath(r.Src), label)
	}
	return 0
}

// writeJSON prints v as indented JSON.
func writeJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return sessionFail(stderr, err)
	}
	return 0
}

// age is d rounded for people: 42s, 5m, 3h, 2d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// trySession records --try's session (SRC's manifest is taken while the
// sandbox starts: the sandbox cannot change SRC) and, at exit, says how
// many files changed and how to apply them.
type trySession struct {
	dst  string
	made chan *session.Session
}

// startTrySession records the session of cow:cwd:dst.
func startTrySession(cwd, dst string) *trySession {
	t := &trySession{dst: dst, made: make(chan *session.Session, 1)}
	if session.Supported() != nil {
		t.made <- nil
		return t
	}
	go func() {
		s, err := session.CreateMeta(context.Background(), cwd, dst)
		if err != nil {
			fmt.Fprintf(os.Stderr, "boxsh: cannot record the session (boxsh apply will not work on it): %v\n", err)
		}
		t.made <- s
	}()
	return t
}

// finish prints the summary once the sandbox has ended.
func (t *trySession) finish(started bool) {
	s := <-t.made
	if s == nil || !started {
		return
	}
	cs, err := s.Changes()
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxsh: changes in %s: %s\n", session.QuotePath(t.dst), session.EscapeControls(err.Error()))
		return
	}
	if len(cs) == 0 {
		fmt.Fprintf(os.Stderr, "boxsh: no files changed (boxsh discard %s removes the session)\n", session.QuotePath(t.dst))
		return
	}
	fmt.Fprintf(os.Stderr, "boxsh: %d file(s) changed in %s: review with boxsh changes %s (or boxsh diff), then apply with:\n  boxsh apply %s\n",
		len(cs), session.QuotePath(s.Src()), session.QuotePath(t.dst), session.QuotePath(t.dst))
}

// knownSessions are the sessions `boxsh sessions` lists: those under base
// (default session.DefaultBaseDir()) and the --try sessions beside the
// working directory.
func knownSessions(base string) ([]*session.Session, error) {
	ss, err := session.List(base)
	if err != nil {
		return nil, err
	}
	if cwd, err := os.Getwd(); err == nil {
		tries, _ := filepath.Glob(filepath.Join(filepath.Dir(cwd), ".boxsh-try-*"))
		for _, d := range tries {
			if s, err := session.Open(d); err == nil {
				ss = append(ss, s)
			}
		}
	}
	return ss, nil
}
