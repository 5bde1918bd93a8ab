package main

import (
	"fmt"
	"io"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
)

// mode is what boxsh was asked to do.
type mode int

const (
	modeShell   mode = iota // run the shell with the remaining arguments
	modeRPC                 // MCP server on stdio
	modeCommand             // run the command after --
	modeHelp
	modeVersion
)

// options is the parsed command line.
type options struct {
	mode        mode
	workers     int
	shell       string
	logLevel    string
	interactive bool
	sandbox     policy.Sandbox
	// policyFile is --policy.
	policyFile string
	// flagSettings are the policy flags (limits, network), as settings.
	flagSettings []flagSetting
	// policy is the merged policy (set by run).
	policy policy.Policy
	// listen is --listen: serve MCP over streamable HTTP on this address
	// instead of stdio; tokenFile is --token-file and noAuth --no-auth.
	listen    string
	tokenFile string
	noAuth    bool
	// publish are the --publish ports, exposed at the start (--rpc).
	publish []publish
	// sandboxes is --sandboxes: the --listen server hosts many sandboxes
	// (see internal/front/fleet), at most maxSandboxes (--max-sandboxes), each
	// deleted after sandboxIdle (--sandbox-idle; 0 the default, -1 never)
	// without a call.
	sandboxes    bool
	maxSandboxes int
	sandboxIdle  time.Duration
	// warmSandboxes is --warm-sandboxes: pre-started ones of each kind.
	warmSandboxes int
	// sandboxDisk is --sandbox-disk: each sandbox's writable layer's
	// bound, in bytes (0: none).
	sandboxDisk int64
	// sandboxRequests is --sandbox-requests and sandboxForwards
	// --sandbox-forwards: each sandbox's bounds on HTTP requests in
	// flight and on exposed ports (0: the defaults).
	sandboxRequests, sandboxForwards int
	// audit is --audit FILE; noAudit --no-audit (see auditPath).
	audit   string
	noAudit bool
	// args are the shell's arguments (modeShell) or the command
	// (modeCommand).
	args []string
	// impliedBy is the first flag that asks for a sandbox without
	// --sandbox (a --bind, a network flag, --cache): it turns the sandbox
	// on, so that no restriction the user asked for is ignored.
	impliedBy string
}

// parseArgs parses boxsh's own options, which come first; the first
// argument that is not one of them (such as -c or a script name) and
// everything after it belong to the shell, and everything after "--" is a
// command to run.
func parseArgs(argv []string, cwd string) (options, error) {
	o := options{mode: modeShell, workers: 4, shell: "/bin/sh"}
	rpc := false
	// networkFlag is the flag that named a network mode (--network MODE
	// or --new-net-ns), allowDomain the first --allow-domain.
	var networkFlag, networkMode, allowDomain string
	sandboxFlag := func(flag string) {
		if o.impliedBy == "" {
			o.impliedBy = flag
		}
	}
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		name, value, hasValue := strings.Cut(arg, "=")
		if !strings.HasPrefix(arg, "--") {
			hasValue = false
			name = arg
		}
		needValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(argv) {
				return "", fmt.Errorf("%w: %s needs a value", policy.ErrUsage, name)
			}
			i++
			return argv[i], nil
		}
		switch name {
		case "--":
			o.args = argv[i+1:]
			if len(o.args) == 0 {
				return o, fmt.Errorf("%w: -- must be followed by a command", policy.ErrUsage)
			}
			o.mode = modeCommand
			if rpc {
				return o, fmt.Errorf("%w: --rpc cannot be combined with -- COMMAND", policy.ErrUsage)
			}
			i = len(argv)
		case "--rpc":
			rpc = true
		case "--listen":
			// The address is optional: 127.0.0.1:0 (a free port).
			v := "127.0.0.1:0"
			switch {
			case hasValue:
				v = value
			case i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-"):
				i++
				v = argv[i]
			}
			if !strings.Contains(v, ":") {
				v = "127.0.0.1:" + v // a bare port
			}
			o.listen = v
		case "--token-file":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			o.tokenFile = v
		case "--no-auth":
			o.noAuth = true
		case "--publish":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			p, err := parsePublish(v)
			if err != nil {
				return o, err
			}
			o.publish = append(o.publish, p)
		case "--audit":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			if v == "" {
				return o, fmt.Errorf("%w: --audit needs a file", policy.ErrUsage)
			}
			o.audit = v
		case "--no-audit":
			o.noAudit = true
		case "--sandboxes":
			o.sandboxes = true
		case "--max-sandboxes":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 10000 {
				return o, fmt.Errorf("%w: --max-sandboxes %q: expected a number from 1 to 10000", policy.ErrUsage, v)
			}
			o.maxSandboxes = n
		case "--warm-sandboxes":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 100 {
				return o, fmt.Errorf("%w: --warm-sandboxes %q: expected a number from 0 to 100", policy.ErrUsage, v)
			}
			o.warmSandboxes = n
		case "--sandbox-requests", "--sandbox-forwards":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 10000 {
				return o, fmt.Errorf("%w: %s %q: expected a number from 1 to 10000", policy.ErrUsage, name, v)
			}
			if name == "--sandbox-requests" {
				o.sandboxRequests = n
			} else {
				o.sandboxForwards = n
			}
		case "--sandbox-disk":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			n, err := policy.ParseSize(v)
			if err != nil || n < 1<<20 {
				return o, fmt.Errorf("%w: --sandbox-disk %q: expected a size of at least 1M, such as 512M or 2G", policy.ErrUsage, v)
			}
			o.sandboxDisk = n
		case "--sandbox-idle":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return o, fmt.Errorf("%w: --sandbox-idle %q: expected a duration such as 30m or 90s (0: never)", policy.ErrUsage, v)
			}
			o.sandboxIdle = d
			if d == 0 {
				o.sandboxIdle = -1 // never, not the default
			}
		case "--workers":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1024 {
				return o, fmt.Errorf("%w: --workers %q: expected a number from 1 to 1024", policy.ErrUsage, v)
			}
			o.workers = n
		case "--shell":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			if v == "" {
				return o, fmt.Errorf("%w: --shell needs a path", policy.ErrUsage)
			}
			o.shell = v
		case "--log-level":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			o.logLevel = v
		case "--sandbox":
			o.sandbox.Enabled = true
		case "--new-net-ns":
			sandboxFlag(name)
			networkFlag, networkMode = name, policy.NetworkDisabled
			o.sandbox.NewNetNS = true
			o.flagSettings = append(o.flagSettings, flagSetting{flag: "--new-net-ns", settings: policy.Settings{Network: policy.NetworkSettings{Mode: policy.NetworkDisabled}}})
		case "--network":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			switch v {
			case policy.NetworkDisabled, policy.NetworkAllowAll, policy.NetworkAllowlist:
			default:
				return o, fmt.Errorf("%w: --network %q: expected disabled, allow_all or allowlist", policy.ErrUsage, v)
			}
			sandboxFlag(name)
			networkFlag, networkMode = name+" "+v, v
			o.flagSettings = append(o.flagSettings, flagSetting{flag: "--network", settings: policy.Settings{Network: policy.NetworkSettings{Mode: v}}})
		case "--allow-domain":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			if v == "" || strings.ContainsAny(v, " /") {
				return o, fmt.Errorf("%w: --allow-domain %q: expected a domain name such as registry.npmjs.org or *.example.com", policy.ErrUsage, v)
			}
			sandboxFlag(name)
			if allowDomain == "" {
				allowDomain = v
			}
			o.flagSettings = append(o.flagSettings, flagSetting{flag: "--allow-domain", settings: policy.Settings{Network: policy.NetworkSettings{AllowedDomains: []string{v}}}})
		case "--bind":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			b, err := policy.ParseBind(v, cwd)
			if err != nil {
				return o, err
			}
			sandboxFlag(name)
			o.sandbox.Binds = append(o.sandbox.Binds, b)
		case "--cache":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			if v == "" {
				return o, fmt.Errorf("%w: --cache needs a directory", policy.ErrUsage)
			}
			if !filepath.IsAbs(v) {
				v = filepath.Join(cwd, v)
			}
			sandboxFlag(name)
			o.sandbox.Cache = filepath.Clean(v)
		case "--env":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			s, err := policy.ParseEnvFlag(v)
			if err != nil {
				return o, fmt.Errorf("%w: --env %q: %v", policy.ErrUsage, v, err)
			}
			o.flagSettings = append(o.flagSettings, flagSetting{flag: "--env", settings: s})
		case "--try":
			o.sandbox.Try = true
		case "--in-place":
			sandboxFlag(name)
			o.sandbox.InPlace = true
		case "--policy":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			if v == "" {
				return o, fmt.Errorf("%w: --policy needs a file", policy.ErrUsage)
			}
			o.policyFile = v
		case "--memory", "--pids", "--cpus", "--timeout-default", "--max-output":
			v, err := needValue()
			if err != nil {
				return o, err
			}
			fs, err := parseLimitFlag(name, v)
			if err != nil {
				return o, err
			}
			o.flagSettings = append(o.flagSettings, fs)
		case "--interactive", "-i":
			o.interactive = true
		case "--help", "-h":
			o.mode = modeHelp
			return o, nil
		case "--version":
			o.mode = modeVersion
			return o, nil
		default:
			if strings.HasPrefix(arg, "--") {
				// A long option that is none of boxsh's: a typo, or a
				// shell's own, which goes after -- (boxsh -- bash --login).
				return o, fmt.Errorf("%w: unknown option %s; a shell's own long option goes after --: boxsh -- %s %s", policy.ErrUsage, name, o.shell, arg)
			}
			// Not ours: this and the rest go to the shell.
			o.args = argv[i:]
			i = len(argv)
		}
	}
	// --allow-domain means the allowlist: it names the mode when no flag
	// does, and contradicts another mode.
	if allowDomain != "" {
		switch networkMode {
		case "":
			o.flagSettings = append(o.flagSettings, flagSetting{flag: "--allow-domain", settings: policy.Settings{Network: policy.NetworkSettings{Mode: policy.NetworkAllowlist}}})
		case policy.NetworkAllowlist:
		default:
			return o, fmt.Errorf("%w: --allow-domain %s needs --network allowlist, not %s", policy.ErrUsage, allowDomain, networkFlag)
		}
	}
	if o.impliedBy != "" {
		o.sandbox.Enabled = true
	}
	if !rpc && (o.listen != "" || o.tokenFile != "" || o.noAuth) {
		return o, fmt.Errorf("%w: --listen, --token-file and --no-auth go with --rpc", policy.ErrUsage)
	}
	if o.noAudit && o.audit != "" {
		return o, fmt.Errorf("%w: --audit and --no-audit exclude each other", policy.ErrUsage)
	}
	if (o.maxSandboxes != 0 || o.sandboxIdle != 0 || o.warmSandboxes != 0 || o.sandboxDisk != 0 || o.sandboxRequests != 0 || o.sandboxForwards != 0) && !o.sandboxes {
		return o, fmt.Errorf("%w: --max-sandboxes, --sandbox-idle, --sandbox-disk, --sandbox-requests, --sandbox-forwards and --warm-sandboxes go with --sandboxes", policy.ErrUsage)
	}
	if o.sandboxes {
		switch {
		case !rpc || o.listen == "":
			return o, fmt.Errorf("%w: --sandboxes goes with --rpc --listen", policy.ErrUsage)
		case o.sandbox.Try:
			return o, fmt.Errorf("%w: --sandboxes and --try exclude each other: every sandbox of --sandboxes is a copy-on-write session already", policy.ErrUsage)
		case len(o.publish) > 0:
			return o, fmt.Errorf("%w: --sandboxes and --publish exclude each other: a sandbox's client exposes its ports with the expose tool", policy.ErrUsage)
		}
		o.sandbox.Enabled = true
	}
	if o.noAuth && o.tokenFile != "" {
		return o, fmt.Errorf("%w: --no-auth and --token-file exclude each other", policy.ErrUsage)
	}
	if o.sandbox.InPlace && goruntime.GOOS == "darwin" {
		return o, fmt.Errorf("%w: --in-place needs Linux: macOS has no mounts to show a cow bind's view at its SRC", policy.ErrUsage)
	}
	if rpc && o.sandbox.Try && goruntime.GOOS != "darwin" {
		// An agent's session shows the project at its own path.
		o.sandbox.InPlace = true
	}
	if rpc && o.mode != modeCommand {
		o.mode = modeRPC
		if len(o.args) > 0 {
			return o, fmt.Errorf("%w: unexpected argument %q in --rpc mode", policy.ErrUsage, o.args[0])
		}
	}
	return o, nil
}

const usage = `Usage: boxsh [OPTIONS] [SHELL-ARGS...]
       boxsh [OPTIONS] --rpc
       boxsh [SANDBOX OPTIONS] -- COMMAND [ARGS...]

A sandboxed POSIX shell and MCP server.

Modes:
  (default)            Run the shell (--shell, default /bin/sh) with SHELL-ARGS:
                       boxsh, boxsh -c 'CMD' [NAME ARGS...], boxsh script.sh ARGS...
                       A long option that is not boxsh's is refused: a shell's
                       own goes after -- (boxsh -- /bin/bash --login).
  --rpc                MCP server: JSON-RPC 2.0 on stdin/stdout (Content-Length
                       framed or newline-delimited, detected from the first bytes).
  --rpc --listen [ADDR]
                       MCP over streamable HTTP at http://ADDR/mcp instead of
                       stdio (default 127.0.0.1:0: a free port, printed on
                       stderr), plus the REST twin (/v1/tools/NAME,
                       /openapi.json). Requests need the bearer token written
                       to the file printed on stderr.
  --token-file PATH    The HTTP bearer token: read from PATH, or made and
                       written there (mode 0600) when PATH does not exist;
                       an existing PATH must be a file of yours with no
                       group or other bits, not a symbolic link.
  --no-auth            No token (only on a loopback address).
  --sandboxes          With --rpc --listen: host many sandboxes, each with its
                       own boxsh-init, workers, network namespace and copy-on-write
                       session of the current directory (or an empty one):
                       POST /v1/sandboxes {"name":N,"from":"workspace"|"empty"}
                       makes one (its MCP endpoint /s/N/mcp, its token in the
                       answer), GET lists, DELETE /v1/sandboxes/N removes one.
                       A MCP session on /mcp gets one of its own. Implies
                       --sandbox; the network is none unless the policy names
                       one (allow_all is refused: it would share the host's).
  --max-sandboxes N    With --sandboxes: at most N at once (default 64).
  --sandbox-idle D     With --sandboxes: delete one idle for D (default 30m; 0:
                       never).
  --sandbox-disk SIZE  With --sandboxes: bound each sandbox's writable layer
                       (its changes) to SIZE (512M, 2G); a create may ask
                       for less ("disk"). Past it files stop growing (EFBIG);
                       a sandbox that grows it further is stopped.
  --sandbox-requests N With --sandboxes: at most N HTTP requests in flight on
                       each sandbox's endpoint, long-polls and SSE streams
                       included (default 32); more get 429 naming the limit.
                       The management API keeps 64 of its own.
  --sandbox-forwards N With --sandboxes: at most N ports exposed at once by
                       each sandbox (default 32), and 64 connections to them
                       open at once (more wait until one ends).
  --warm-sandboxes N   With --sandboxes: keep N started ahead of each kind
                       (workspace, empty), so that a create answers at once;
                       refilled in the background (default 0).
  --publish [HOST_PORT:]PORT
                       Listen on the host's 127.0.0.1:HOST_PORT (default: a
                       free port; the address is printed on stderr) and connect
                       each connection to the sandbox's 127.0.0.1:PORT, as the
                       expose tool does: with --rpc, and in shell mode and with
                       -- COMMAND in a sandbox. Inbound only. Repeatable.
  -- COMMAND ARGS...   Run COMMAND (for example a stdio MCP server) with stdio
                       passed through, inside the sandbox when --sandbox is given.
  --try                A sandboxed shell on the current directory; writes land in
                       a copy-on-write directory that is kept after exit.

Options:
  --audit FILE         Append a JSON line to FILE for every tool call (tool,
                       argument summary, outcome, duration), shell mode run and
                       network decision (boxsh audit FILE prints it). Made mode
                       0600; an existing FILE must be yours, mode 0600, not a
                       link. Refused inside a directory the sandbox can write.
                       On by default on a copy-on-write session (--try, the Go
                       client's), in the session's directory. With --sandboxes:
                       one log, each entry naming its sandbox, management calls
                       too; a sandbox's audit tool answers its own entries.
  --no-audit           No audit log, not even a session's.
  --workers N          Bash commands run at once in --rpc mode (default 4).
  --shell PATH         Shell for commands and shell mode (default /bin/sh).
  --interactive, -i    Force an interactive shell even when stdin is not a tty.
  --log-level LEVEL    trace, debug, info, warn (default) or error; logs go to
                       stderr. Also BOXSH_LOG_LEVEL.
  --version            Print the version.
  --help, -h           Print this help.

Sandbox options (each of them, and a --policy file with filesystem or network
settings, turns the sandbox on):
  --sandbox            Enable the sandbox: only system directories are visible;
                       expose project paths with --bind. $HOME is an empty,
                       writable directory of the sandbox's own unless a bind
                       shows it.
  --new-net-ns         A network namespace of its own (loopback only); the same
                       as --network disabled.
  --network MODE       disabled, allow_all (default), or allowlist: only the
                       allowed domains, through boxsh's proxy.
  --allow-domain NAME  Allow NAME (registry.npmjs.org, *.example.com, name:443);
                       implies --network allowlist.
  --bind ro:PATH       Expose PATH read-only.
  --bind wr:PATH       Expose PATH read-write.
  --bind cow:SRC:DST   Copy-on-write: SRC appears at DST; writes go to DST, SRC
                       never changes.
  --in-place           Show each cow bind's view at its SRC too, the project at
                       its own path, and start a command from SRC there, not
                       in DST (--rpc --try does so; --try in shell mode starts
                       in DST, as boxsh v3 does). Linux only.
  --cache DIR          Keep tool caches in the host directory DIR across runs:
                       it is $HOME/.cache inside (XDG_CACHE_HOME), with Go's
                       module and build caches and npm's cache in it.

Policy options (also in settings files: ~/.config/boxsh/policy.json, then
./.boxsh/policy.json, then --policy FILE; flags win; see boxsh policy --help):
  --policy FILE        A settings file merged after the global and project ones.
  --env NAME           Pass the host's variable NAME to commands (NAME* passes
                       the variables it starts, but those that look like
                       secrets); --env NAME=VALUE sets one.
  --timeout-default S  Timeout, in seconds, of bash calls that give none.
  --max-output SIZE    Cap on each output stream of a bash call (default 10M).
  --memory SIZE        Cap on the data of each command's processes (512M, 2G).
  --pids N             Most processes in the sandbox at once (with --sandbox).
  --cpus N             Processor cores for a sandbox started by root (cgroup);
                       not enforced rootless.

Other commands:
  boxsh spec [OPTIONS]           Print the sandbox as an OCI runtime spec.
  boxsh doctor                   Check that this host can run sandboxes, and
                                 say what to change where it cannot.
  boxsh policy init|show [...]   Write the default settings; show the policy.
  boxsh policy trust [PATH]      Let a project's settings file widen the policy
                                 (it can only narrow it until then).
  boxsh changes DST              List the changes of a copy-on-write session
                                 (--try's .boxsh-try-XXXXXX/work, or the Go client's).
  boxsh diff DST [PATH]          Unified diff of its changes.
  boxsh apply DST [--dry-run]    Write them into SRC (deletions too); host-changed
                                 and protected paths are reported, not applied.
  boxsh discard DST              Remove the session.
  boxsh sessions                 List the sessions, with age and size.
  boxsh audit [FILE|DST] [--json]
                                 Print an audit log (--audit's FILE, or a
                                 copy-on-write session's; by default the latest
                                 session's whose source is this directory).
`

// flagSetting is a setting given on the command line, with its flag.
type flagSetting struct {
	flag     string
	settings policy.Settings
}

// parseLimitFlag parses one of the limit flags as settings.
func parseLimitFlag(flag, v string) (flagSetting, error) {
	fs := flagSetting{flag: flag}
	l := &fs.settings.Limits
	bad := func(want string) (flagSetting, error) {
		return fs, fmt.Errorf("%w: %s %q: expected %s", policy.ErrUsage, flag, v, want)
	}
	switch flag {
	case "--memory":
		if _, err := policy.ParseSize(v); err != nil {
			return bad("a size such as 512M or 2G")
		}
		l.Memory = v
	case "--pids":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return bad("a positive number of processes")
		}
		l.Pids = n
	case "--cpus":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return bad("a positive number of cores, such as 1.5")
		}
		l.CPUs = f
	case "--timeout-default":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return bad("a positive number of seconds")
		}
		l.TimeoutDefault = f
	case "--max-output":
		n, err := policy.ParseSize(v)
		if err != nil {
			return bad("a size in bytes, such as 1048576 or 1M")
		}
		l.MaxOutput = n
	}
	return fs, nil
}

// loadPolicy merges the defaults, the settings files and the flags of o
// (see policy.Load).
func loadPolicy(o options, home, cwd string) (policy.Policy, error) {
	cfg := policy.LoadConfig{Home: home, Dir: cwd, PolicyFile: o.policyFile, Writable: writableBy(o.sandbox)}
	for _, fs := range o.flagSettings {
		cfg.Flags = append(cfg.Flags, policy.FlagSettings{Flag: fs.flag, Settings: fs.settings})
	}
	return policy.Load(cfg)
}

// writableBy tells which host paths the sandbox sb could write: those a
// wr bind or a cow destination shows (nil without a sandbox, where
// commands can write anything the user can anyway).
func writableBy(sb policy.Sandbox) func(string) bool {
	if !sb.Enabled && !sb.Try {
		return nil
	}
	return func(p string) bool {
		for _, b := range sb.Binds {
			if b.Mode != policy.ReadOnly && pathtree.Within(p, b.Dst) {
				return true
			}
		}
		return false
	}
}

// warnUntrusted prints one line on stderr for each untrusted settings file
// of p that had settings ignored.
func warnUntrusted(w io.Writer, p policy.Policy) {
	for _, u := range p.Untrusted {
		if line := policy.UntrustedWarning(u); line != "" {
			fmt.Fprintf(w, "boxsh: warning: %s\n", line)
		}
	}
}

// warnWithheld prints one line for each environment.pass pattern whose
// matches in environ were withheld as secret-looking, with how to pass one.
func warnWithheld(w io.Writer, p policy.Policy, environ []string) {
	for _, h := range policy.WithheldEnv(p, environ) {
		fmt.Fprintf(w, "boxsh: %s (%s) withheld %s: they look like secrets; pass one by its name, as --env %s\n",
			h.Rule.Value, h.Rule.Source, strings.Join(h.Names, ", "), h.Names[0])
	}
}
