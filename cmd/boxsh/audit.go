package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/boxsh/boxsh/client/session"
	"github.com/boxsh/boxsh/internal/bytesize"
	"github.com/boxsh/boxsh/internal/front/audit"
	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/rpc"
	"github.com/boxsh/boxsh/runtime/host"
)

// auditPath returns the path of the audit log of a run whose sandbox
// resolved to sb. It is:
//   - --audit's file, if given;
//   - the session's AuditFile, for a sandbox on a copy-on-write session
//     (--try's, or a cow bind whose DST is a session's);
//   - "" for none, or with --no-audit.
func auditPath(opts options, sb policy.Sandbox) string {
	if opts.noAudit {
		return ""
	}
	if opts.audit != "" {
		return opts.audit
	}
	if !sb.Enabled && !opts.sandbox.Try {
		return ""
	}
	for i, b := range sb.Binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		dir := filepath.Dir(b.Dst)
		// --try's own bind is the last (host.ResolveTry); its session
		// is recorded while the sandbox starts.
		try := opts.sandbox.Try && i == len(sb.Binds)-1
		if _, err := os.Lstat(filepath.Join(dir, session.MetaFile)); err == nil || try {
			return filepath.Join(dir, session.AuditFile)
		}
	}
	return ""
}

// openAudit opens the audit log of a run, or returns nil when it has
// none. It refuses a log the sandbox sb could write: one in a wr bind, a
// cow bind's changes directory or the --cache directory. The sandbox must
// not be able to change the record of what it did.
func openAudit(opts options, sb policy.Sandbox) (*audit.Log, error) {
	path := auditPath(opts, sb)
	if path == "" {
		return nil, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("--audit %s: %w", path, err)
	}
	if sb.Enabled || sb.Try {
		if err := outsideWritable(abs, sb); err != nil {
			return nil, err
		}
	}
	return audit.Open(abs)
}

// outsideWritable refuses an audit log path whose directory the sandbox
// sb can write, compared with symbolic links resolved.
func outsideWritable(path string, sb policy.Sandbox) error {
	dir := realPath(filepath.Dir(path))
	var writable []string
	for _, b := range sb.Binds {
		switch b.Mode {
		case policy.ReadWrite:
			writable = append(writable, b.Src)
		case policy.CopyOnWrite:
			writable = append(writable, b.Dst)
		}
	}
	if sb.Cache != "" {
		writable = append(writable, sb.Cache)
	}
	for _, w := range writable {
		real := realPath(w)
		if pathtree.Within(dir, real) {
			return fmt.Errorf("%w: audit log %s is in %s, which the sandbox can write: it could change or remove the record of what it did; put the log outside the sandbox's writable binds", policy.ErrUsage, path, w)
		}
	}
	return nil
}

// realPath is the absolute path p with the symbolic links of its longest
// existing part resolved (a cow bind's DST may not exist yet).
func realPath(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// auditDecisions records the network proxy's decisions in l (nil: none).
func auditDecisions(l *audit.Log, log hclog.Logger) func(proxy.Decision) {
	rec := auditSandboxDecisions(l, log)
	if rec == nil {
		return nil
	}
	return func(d proxy.Decision) { rec("", d) }
}

// auditSandboxDecisions records the decisions of a sandbox's network
// proxy in l (nil: none), naming the sandbox.
func auditSandboxDecisions(l *audit.Log, log hclog.Logger) func(string, proxy.Decision) {
	if l == nil {
		return nil
	}
	return func(sandbox string, d proxy.Decision) {
		allowed := d.Allowed
		e := audit.Entry{Kind: tool.AuditNetwork, Sandbox: sandbox, Host: d.Host, Port: d.Port, Protocol: d.Protocol, Allowed: &allowed, Rule: d.Rule,
			Reason: d.Reason, Allow: d.Allow, Secrets: d.Secrets}
		if d.Asked {
			// Only the stdio client is ever asked (--network-ask).
			e.Client, e.Answer = "stdio", d.Answer.String()
		}
		record(l, log, e)
	}
}

// auditManaged records the management calls of a server of many
// sandboxes in l (nil: none).
func auditManaged(l *audit.Log, log hclog.Logger) func(rpc.SandboxCall) {
	if l == nil {
		return func(rpc.SandboxCall) {}
	}
	return func(c rpc.SandboxCall) {
		e := audit.Entry{Time: audit.Time(c.Began), Kind: tool.AuditSandbox, Client: c.Client, Sandbox: c.Name, Tool: c.Action,
			Args: c.Args, DurationMS: time.Since(c.Began).Milliseconds()}
		if c.Err != nil {
			e.Error = c.Err.Error()
		}
		record(l, log, e)
	}
}

// record appends e to l, logging a failure.
func record(l *audit.Log, log hclog.Logger, e audit.Entry) {
	if err := l.Record(e); err != nil {
		log.Error("audit log", "error", err)
	}
}

// auditShell records a run of shell mode, argv, that started at began
// and ended with code.
func auditShell(l *audit.Log, log hclog.Logger, argv []string, began time.Time, code int) {
	if l == nil {
		return
	}
	args, _ := json.Marshal(map[string][]string{"args": argv})
	e := audit.Entry{Time: audit.Time(began), Kind: tool.AuditShell, Client: "shell", Args: audit.Summarize(args),
		ExitCode: &code, DurationMS: time.Since(began).Milliseconds()}
	record(l, log, e)
}

// shellAudit records a sandboxed run of shell mode, on Linux and macOS
// alike. It records the decisions of its proxy as they come. Once the run
// has ended, it records the run: its argv, exit status and duration.
type shellAudit struct {
	l     *audit.Log // nil: no log
	log   hclog.Logger
	began time.Time
}

// openShellAudit opens the audit log of a sandboxed run of shell mode
// whose sandbox resolved to sb (see openAudit).
func openShellAudit(opts options, sb policy.Sandbox, log hclog.Logger) (*shellAudit, error) {
	l, err := openAudit(opts, sb)
	if err != nil {
		return nil, err
	}
	return &shellAudit{l: l, log: log, began: time.Now()}, nil
}

// proxy observes the sandbox's network proxy.
func (a *shellAudit) proxy() host.ProxyHooks {
	return host.ProxyHooks{Decided: auditDecisions(a.l, a.log)}
}

// started marks the start of the run.
func (a *shellAudit) started() { a.began = time.Now() }

// ended records the run of argv, which ended with code.
func (a *shellAudit) ended(argv []string, code int) { auditShell(a.l, a.log, argv, a.began, code) }

// close closes the log.
func (a *shellAudit) close() {
	if a.l != nil {
		a.l.Close()
	}
}

const auditUsage = `Usage: boxsh audit [FILE|DST] [--json]

Print an audit log: FILE (as given to --audit), or the log of the
copy-on-write session whose DST (or directory) is given; without either,
the log of the latest session (of those boxsh sessions lists: --try's, the
Go client's, a --sandboxes server's) whose source is the current
directory. One line per entry:
time, client, tool and its arguments (names quoted as boxsh changes quotes
them), then the outcome; network decisions of the proxy, and runs of shell
mode. --json prints the entries as a JSON array.
`

// runAudit is `boxsh audit`.
func runAudit(args []string, stdout, stderr io.Writer) int {
	flags, rest, err := sessionArgs(args, "--json")
	if err == nil && len(rest) > 1 {
		err = fmt.Errorf("unexpected argument %q: expected boxsh audit [FILE|DST] [--json]", rest[1])
	}
	if err != nil {
		return sessionFail(stderr, err)
	}
	var path string
	if len(rest) == 1 {
		path, err = auditFileOf(rest[0])
	} else {
		path, err = latestAuditHere()
	}
	if err != nil {
		return sessionFail(stderr, err)
	}
	f, err := audit.ReadFile(path)
	if err != nil {
		return sessionFail(stderr, err)
	}
	defer f.Close()
	_, asJSON := flags["--json"]
	var entries []audit.Entry
	bad := 0
	err = audit.Read(f, func(e audit.Entry) error {
		if asJSON {
			entries = append(entries, e)
			return nil
		}
		_, err := fmt.Fprintln(stdout, formatEntry(e))
		return err
	}, func(le *audit.LineError) {
		bad++
		fmt.Fprintf(stderr, "boxsh: %s: %s\n", session.QuotePath(path), session.EscapeControls(le.Error()))
	})
	if err != nil {
		return sessionFail(stderr, err)
	}
	if asJSON {
		if entries == nil {
			entries = []audit.Entry{}
		}
		if code := writeJSON(stdout, stderr, entries); code != 0 {
			return code
		}
	}
	if bad > 0 {
		return 1
	}
	return 0
}

// auditFileOf is the log named by arg: a session's (arg is its DST or
// directory) or arg itself.
func auditFileOf(arg string) (string, error) {
	fi, err := os.Stat(arg)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("audit log %s: no such file or session", arg)
		}
		return "", err
	}
	if !fi.IsDir() {
		return arg, nil
	}
	s, err := session.Open(arg)
	if err != nil {
		return "", fmt.Errorf("%s is a directory but not a session: %w", arg, err)
	}
	return filepath.Join(s.Dir(), session.AuditFile), nil
}

// latestAuditHere is the audit log of the latest session, of those
// knownSessions finds, whose source is the working directory and which
// has one.
func latestAuditHere() (string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	ss, err := knownSessions("")
	if err != nil {
		return "", err
	}
	here := realPath(cwd)
	var latest *session.Session
	for _, s := range ss {
		if realPath(s.Src()) != here {
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.Dir(), session.AuditFile)); err != nil {
			continue
		}
		if latest == nil || s.Info().Started.After(latest.Info().Started) {
			latest = s
		}
	}
	if latest == nil {
		return "", fmt.Errorf("no audit log: no session of %s has one (boxsh audit FILE|DST names one; boxsh sessions lists the sessions)", cwd)
	}
	return filepath.Join(latest.Dir(), session.AuditFile), nil
}

// formatEntry returns the line `boxsh audit` prints for e. Every name the
// sandbox or the client chose (a command, a path, a host) is quoted as
// boxsh changes quotes file names. So none can forge lines on the
// reader's terminal.
func formatEntry(e audit.Entry) string {
	var b strings.Builder
	b.WriteString(e.Time)
	who := e.Client
	if who == "" {
		who = "-"
	}
	fmt.Fprintf(&b, " %s", session.QuotePath(who))
	if e.Sandbox != "" {
		fmt.Fprintf(&b, " [%s]", session.QuotePath(e.Sandbox))
	}
	switch e.Kind {
	case tool.AuditNetwork:
		verdict := "refused"
		if e.Allowed != nil && *e.Allowed {
			verdict = "allowed"
		}
		fmt.Fprintf(&b, " network %s %s:%d %s", session.QuotePath(e.Protocol), session.QuotePath(e.Host), e.Port, verdict)
		if e.Rule != "" {
			fmt.Fprintf(&b, " by %s", session.QuotePath(e.Rule))
		}
		if e.Answer != "" {
			fmt.Fprintf(&b, " asked: %s", session.QuotePath(e.Answer))
		}
		return b.String()
	case tool.AuditShell:
		b.WriteString(" shell")
	case tool.AuditSandbox:
		fmt.Fprintf(&b, " sandbox %s", session.QuotePath(e.Tool))
	default:
		fmt.Fprintf(&b, " %s", session.QuotePath(e.Tool))
	}
	b.WriteString(formatArgs(e.Args))
	switch {
	case e.Error != "":
		fmt.Fprintf(&b, " error %s", session.QuotePath(e.Error))
	case e.ExitCode != nil:
		fmt.Fprintf(&b, " exit %d", *e.ExitCode)
	case e.IsError:
		b.WriteString(" failed")
	case e.Kind == tool.AuditCall || e.Kind == tool.AuditSandbox:
		b.WriteString(" ok")
	}
	if e.TimedOut {
		b.WriteString(" timed-out")
	}
	if e.Cancelled {
		b.WriteString(" cancelled")
	}
	fmt.Fprintf(&b, " %dms", e.DurationMS)
	if e.Kind == tool.AuditCall {
		fmt.Fprintf(&b, " %s", bytesize.Format(e.OutputBytes))
	}
	return b.String()
}

// argOrder is the order formatEntry prints arguments in; the others
// follow by name.
var argOrder = []string{"command", "args", "path", "id", "cwd"}

// formatArgs is " NAME=VALUE" for each member of a summary, strings
// quoted by session.QuotePath and always in quotes, so that their ends
// show.
func formatArgs(args map[string]any) string {
	var b strings.Builder
	names := make([]string, 0, len(args))
	for _, k := range argOrder {
		if _, ok := args[k]; ok {
			names = append(names, k)
		}
	}
	var rest []string
	for k := range args {
		if !slices.Contains(argOrder, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	names = append(names, rest...)
	for _, k := range names {
		fmt.Fprintf(&b, " %s=%s", session.QuotePath(k), formatValue(args[k]))
	}
	return b.String()
}

// formatValue prints a summary value: strings quoted, lists in brackets,
// the sizes as NAME:BYTES.
func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		q := session.QuotePath(v)
		if !strings.HasPrefix(q, `"`) {
			q = `"` + q + `"`
		}
		return q
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = formatValue(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = session.QuotePath(k) + ":" + formatValue(v[k])
		}
		return "{" + strings.Join(parts, " ") + "}"
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}
