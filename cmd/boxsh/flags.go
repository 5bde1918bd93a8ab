package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxsh/boxsh/policy"
)

// argKind is what a flag takes after its name.
type argKind int

const (
	// noArg is a switch. A value given as --flag=VALUE is ignored.
	noArg argKind = iota
	// needArg takes a value, as --flag VALUE or --flag=VALUE.
	needArg
	// optionalArg takes a value as --flag=VALUE, or as --flag VALUE
	// when VALUE does not start with "-"; without one it is the flag's
	// def.
	optionalArg
	// restArgs ends boxsh's options: what follows is a command.
	restArgs
)

// section is a part of boxsh --help that lists flags.
type section int

const (
	sectionModes section = iota
	sectionOptions
	sectionSandbox
	sectionPolicy
)

// setter applies one flag, as spelled (name) and with its value (v), to
// the command line being parsed.
type setter func(p *parser, name, v string) error

// helpForm is one more entry of a flag in the help: the flag's name
// followed by another placeholder.
type helpForm struct {
	placeholder string
	help        []string
}

// flagDef is one of boxsh's own flags: how it is spelled, what it takes,
// what it sets and how the help shows it.
type flagDef struct {
	// names are the accepted spellings; the help lists them in order.
	names []string
	arg   argKind
	// def is an optionalArg flag's value when none is given.
	def string
	// placeholder names the value in the help ("N", "PATH").
	placeholder string
	// label, when set, replaces the names in the help's entry.
	label   string
	section section
	// help is the entry's text, one string a line as printed.
	help []string
	// more are further entries of the flag in the help (--bind's forms).
	more []helpForm
	// impliesSandbox tells that the flag turns the sandbox on: the first
	// such flag is options.impliedBy.
	impliesSandbox bool
	// stop tells that parsing ends at the flag, without the checks of
	// the whole command line (--help, --version).
	stop bool
	set  setter
}

// flagTable is boxsh's flags, in the order of the help. parseArgs knows
// no flag that is not here, and boxsh --help lists every one.
var flagTable = []flagDef{
	// Modes.
	{
		names: []string{"--rpc"}, section: sectionModes,
		help: []string{
			"MCP server: JSON-RPC 2.0 on stdin/stdout (Content-Length",
			"framed or newline-delimited, detected from the first bytes).",
		},
		set: func(p *parser, _, _ string) error { p.rpc = true; return nil },
	},
	{
		names: []string{"--listen"}, arg: optionalArg, def: "127.0.0.1:0",
		label: "--rpc --listen", placeholder: "[ADDR]", section: sectionModes,
		help: []string{
			"MCP over streamable HTTP at http://ADDR/mcp instead of",
			"stdio (default 127.0.0.1:0: a free port, printed on",
			"stderr), plus the REST twin (/v1/tools/NAME,",
			"/openapi.json). Requests need the bearer token written",
			"to the file printed on stderr. unix:PATH is a Unix",
			"socket at PATH instead, mode 0600 (a stale socket there",
			"is replaced, anything else refused), removed at exit.",
		},
		set: func(p *parser, _, v string) error {
			if !strings.Contains(v, ":") {
				v = "127.0.0.1:" + v // a bare port
			}
			p.o.listen = v
			return nil
		},
	},
	{
		names: []string{"--token-file"}, arg: needArg, placeholder: "PATH", section: sectionModes,
		help: []string{
			"The HTTP bearer token: read from PATH, or made and",
			"written there (mode 0600) when PATH does not exist;",
			"an existing PATH must be a file of yours with no",
			"group or other bits, not a symbolic link.",
		},
		set: func(p *parser, _, v string) error { p.o.tokenFile = v; return nil },
	},
	{
		names: []string{"--no-auth"}, section: sectionModes,
		help: []string{"No token (only on a loopback address or unix:PATH)."},
		set:  on(func(o *options) *bool { return &o.noAuth }),
	},
	{
		names: []string{"--sandboxes"}, section: sectionModes,
		help: []string{
			"With --rpc --listen: host many sandboxes, each with its",
			"own boxsh-init, workers, network namespace and copy-on-write",
			"session of the current directory (or an empty one):",
			`POST /v1/sandboxes {"name":N,"from":"workspace"|"empty"}`,
			"makes one (its MCP endpoint /s/N/mcp, its token in the",
			"answer), GET lists, DELETE /v1/sandboxes/N removes one.",
			"An MCP session on /mcp gets one of its own. Implies",
			"--sandbox; the network is none unless the policy names",
			"one (allow_all is refused: it would share the host's).",
		},
		set: on(func(o *options) *bool { return &o.sandboxes }),
	},
	{
		names: []string{"--max-sandboxes"}, arg: needArg, placeholder: "N", section: sectionModes,
		help: []string{"With --sandboxes: at most N at once (default 64)."},
		set:  number(1, 10000, func(o *options) *int { return &o.maxSandboxes }),
	},
	{
		names: []string{"--sandbox-idle"}, arg: needArg, placeholder: "D", section: sectionModes,
		help: []string{
			"With --sandboxes: delete one idle for D (default 30m; 0:",
			"never).",
		},
		set: func(p *parser, _, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("%w: --sandbox-idle %q: expected a duration such as 30m or 90s (0: never)", policy.ErrUsage, v)
			}
			p.o.sandboxIdle = d
			if d == 0 {
				p.o.sandboxIdle = -1 // never, not the default
			}
			return nil
		},
	},
	{
		names: []string{"--sandbox-disk"}, arg: needArg, placeholder: "SIZE", section: sectionModes,
		help: []string{
			"With --sandboxes: bound each sandbox's writable layer",
			"(its changes) to SIZE (512M, 2G); a create may ask",
			`for less ("disk"). Past it files stop growing (EFBIG);`,
			"a sandbox that grows it further is stopped.",
		},
		set: func(p *parser, _, v string) error {
			n, err := policy.ParseSize(v)
			if err != nil || n < 1<<20 {
				return fmt.Errorf("%w: --sandbox-disk %q: expected a size of at least 1M, such as 512M or 2G", policy.ErrUsage, v)
			}
			p.o.sandboxDisk = n
			return nil
		},
	},
	{
		names: []string{"--sandbox-requests"}, arg: needArg, placeholder: "N", section: sectionModes,
		help: []string{
			"With --sandboxes: at most N HTTP requests in flight on",
			"each sandbox's endpoint, long-polls and SSE streams",
			"included (default 32); more get 429 naming the limit.",
			"The management API keeps 64 of its own.",
		},
		set: number(1, 10000, func(o *options) *int { return &o.sandboxRequests }),
	},
	{
		names: []string{"--sandbox-forwards"}, arg: needArg, placeholder: "N", section: sectionModes,
		help: []string{
			"With --sandboxes: at most N ports exposed at once by",
			"each sandbox (default 32), and 64 connections to them",
			"open at once (more wait until one ends).",
		},
		set: number(1, 10000, func(o *options) *int { return &o.sandboxForwards }),
	},
	{
		names: []string{"--warm-sandboxes"}, arg: needArg, placeholder: "N", section: sectionModes,
		help: []string{
			"With --sandboxes: keep N started ahead of each kind",
			"(workspace, empty), so that a create answers at once;",
			"refilled in the background (default 0).",
		},
		set: number(0, 100, func(o *options) *int { return &o.warmSandboxes }),
	},
	{
		names: []string{"--server-id"}, arg: needArg, placeholder: "ID", section: sectionModes,
		help: []string{
			"With --sandboxes: name this server in every answer",
			"(the Boxsh-Server header, a sandbox's \"server\") behind",
			"a router (default: $POD_NAME, else the host name).",
		},
		set: func(p *parser, _, v string) error {
			if v == "" || strings.ContainsAny(v, "\r\n") {
				return fmt.Errorf("%w: --server-id %q: expected a name on one line", policy.ErrUsage, v)
			}
			p.o.serverID = v
			return nil
		},
	},
	{
		names: []string{"--publish"}, arg: needArg, placeholder: "[HOST_PORT:]PORT", section: sectionModes,
		help: []string{
			"Listen on the host's 127.0.0.1:HOST_PORT (default: a",
			"free port; the address is printed on stderr) and connect",
			"each connection to the sandbox's 127.0.0.1:PORT, as the",
			"expose tool does: with --rpc, and in shell mode and with",
			"-- COMMAND in a sandbox. Inbound only. Repeatable.",
		},
		set: func(p *parser, _, v string) error {
			pub, err := parsePublish(v)
			if err != nil {
				return err
			}
			p.o.publish = append(p.o.publish, pub)
			return nil
		},
	},
	{
		names: []string{"--"}, arg: restArgs, placeholder: "COMMAND ARGS...", section: sectionModes,
		help: []string{
			"Run COMMAND (for example a stdio MCP server) with stdio",
			"passed through, inside the sandbox when --sandbox is given.",
		},
		set: func(p *parser, _, _ string) error {
			if len(p.o.args) == 0 {
				return fmt.Errorf("%w: -- must be followed by a command", policy.ErrUsage)
			}
			p.o.mode = modeCommand
			if p.rpc {
				return fmt.Errorf("%w: --rpc cannot be combined with -- COMMAND", policy.ErrUsage)
			}
			return nil
		},
	},
	{
		names: []string{"--try"}, section: sectionModes,
		help: []string{
			"A sandboxed shell on the current directory; writes land in",
			"a copy-on-write directory that is kept after exit.",
		},
		set: on(func(o *options) *bool { return &o.sandbox.Try }),
	},

	// Options.
	{
		names: []string{"--audit"}, arg: needArg, placeholder: "FILE", section: sectionOptions,
		help: []string{
			"Append a JSON line to FILE for every tool call (tool,",
			"argument summary, outcome, duration), shell mode run and",
			"network decision (boxsh audit FILE prints it). Made mode",
			"0600; an existing FILE must be yours, mode 0600, not a",
			"link. Refused inside a directory the sandbox can write.",
			"On by default on a copy-on-write session (--try, the Go",
			"client's), in the session's directory. With --sandboxes:",
			"one log, each entry naming its sandbox, management calls",
			"too; a sandbox's audit tool answers its own entries.",
		},
		set: nonEmpty("file", func(o *options) *string { return &o.audit }),
	},
	{
		names: []string{"--no-audit"}, section: sectionOptions,
		help: []string{"No audit log, not even a session's."},
		set:  on(func(o *options) *bool { return &o.noAudit }),
	},
	{
		names: []string{"--workers"}, arg: needArg, placeholder: "N", section: sectionOptions,
		help: []string{"Bash commands run at once in --rpc mode (default 4)."},
		set:  number(1, 1024, func(o *options) *int { return &o.workers }),
	},
	{
		names: []string{"--shell"}, arg: needArg, placeholder: "PATH", section: sectionOptions,
		help: []string{"Shell for commands and shell mode (default /bin/sh)."},
		set:  nonEmpty("path", func(o *options) *string { return &o.shell }),
	},
	{
		names: []string{"--interactive", "-i"}, section: sectionOptions,
		help: []string{"Force an interactive shell even when stdin is not a tty."},
		set:  on(func(o *options) *bool { return &o.interactive }),
	},
	{
		names: []string{"--log-level"}, arg: needArg, placeholder: "LEVEL", section: sectionOptions,
		help: []string{
			"trace, debug, info, warn (default) or error; logs go to",
			"stderr. Also BOXSH_LOG_LEVEL.",
		},
		set: func(p *parser, _, v string) error { p.o.logLevel = v; return nil },
	},
	{
		names: []string{"--version"}, section: sectionOptions, stop: true,
		help: []string{"Print the version."},
		set:  func(p *parser, _, _ string) error { p.o.mode = modeVersion; return nil },
	},
	{
		names: []string{"--help", "-h"}, section: sectionOptions, stop: true,
		help: []string{"Print this help."},
		set:  func(p *parser, _, _ string) error { p.o.mode = modeHelp; return nil },
	},

	// Sandbox options.
	{
		names: []string{"--sandbox"}, section: sectionSandbox,
		help: []string{
			"Enable the sandbox: only system directories are visible;",
			"expose project paths with --bind. $HOME is an empty,",
			"writable directory of the sandbox's own unless a bind",
			"shows it.",
		},
		set: on(func(o *options) *bool { return &o.sandbox.Enabled }),
	},
	{
		names: []string{"--new-net-ns"}, section: sectionSandbox, impliesSandbox: true,
		help: []string{
			"A network namespace of its own (loopback only); the same",
			"as --network disabled.",
		},
		set: func(p *parser, name, _ string) error {
			p.networkFlag, p.networkMode = name, policy.NetworkDisabled
			p.o.sandbox.NewNetNS = true
			p.setting(name, policy.Settings{Network: policy.NetworkSettings{Mode: policy.NetworkDisabled}})
			return nil
		},
	},
	{
		names: []string{"--network"}, arg: needArg, placeholder: "MODE", section: sectionSandbox, impliesSandbox: true,
		help: []string{
			"disabled, allow_all (default), or allowlist: only the",
			"allowed domains, through boxsh's proxy.",
		},
		set: func(p *parser, name, v string) error {
			switch v {
			case policy.NetworkDisabled, policy.NetworkAllowAll, policy.NetworkAllowlist:
			default:
				return fmt.Errorf("%w: --network %q: expected disabled, allow_all or allowlist", policy.ErrUsage, v)
			}
			p.networkFlag, p.networkMode = name+" "+v, v
			p.setting(name, policy.Settings{Network: policy.NetworkSettings{Mode: v}})
			return nil
		},
	},
	{
		names: []string{"--allow-domain"}, arg: needArg, placeholder: "NAME", section: sectionSandbox, impliesSandbox: true,
		help: []string{
			"Allow NAME (registry.npmjs.org, *.example.com, name:443);",
			"implies --network allowlist.",
		},
		set: func(p *parser, name, v string) error {
			if v == "" || strings.ContainsAny(v, " /") {
				return fmt.Errorf("%w: --allow-domain %q: expected a domain name such as registry.npmjs.org or *.example.com", policy.ErrUsage, v)
			}
			if p.allowDomain == "" {
				p.allowDomain = "--allow-domain " + v
			}
			p.setting(name, policy.Settings{Network: policy.NetworkSettings{AllowedDomains: []string{v}}})
			return nil
		},
	},
	{
		names: []string{"--secret"}, arg: needArg, placeholder: "NAME=HOST[,HOST...]", section: sectionSandbox, impliesSandbox: true,
		help: []string{
			"Keep $NAME out of the sandbox: there it holds a stand-in,",
			"which the proxy replaces with the real value only in",
			"requests to HOST (Authorization header); allows HOST and",
			"implies --network allowlist.",
		},
		set: func(p *parser, name, v string) error {
			env, hosts, ok := strings.Cut(v, "=")
			if !ok || env == "" || hosts == "" {
				return fmt.Errorf("%w: --secret %q: expected NAME=HOST[,HOST...], such as GH_TOKEN=api.github.com", policy.ErrUsage, v)
			}
			sec := policy.SecretSetting{Env: env, Hosts: strings.Split(hosts, ",")}
			if p.allowDomain == "" {
				p.allowDomain = "--secret " + v
			}
			p.setting(name, policy.Settings{Network: policy.NetworkSettings{AllowedDomains: sec.Hosts, Secrets: []policy.SecretSetting{sec}}})
			return nil
		},
	},
	{
		names: []string{"--secret-file"}, arg: needArg, placeholder: "PATH=HOST[,HOST...]", section: sectionSandbox, impliesSandbox: true,
		help: []string{
			"Show the sandbox credentials file PATH (.npmrc, .netrc,",
			".git-credentials, Docker's config.json) with stand-ins for",
			"its credentials, which the proxy replaces with the real ones",
			"only in requests to HOST; allows HOST and implies --network",
			"allowlist.",
		},
		set: func(p *parser, name, v string) error {
			path, hosts, ok := strings.Cut(v, "=")
			if !ok || path == "" || hosts == "" {
				return fmt.Errorf("%w: --secret-file %q: expected PATH=HOST[,HOST...], such as ~/.npmrc=registry.npmjs.org", policy.ErrUsage, v)
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				return fmt.Errorf("%w: --secret-file %q: %v", policy.ErrUsage, v, err)
			}
			f := policy.SecretFileSetting{Path: abs, Hosts: strings.Split(hosts, ",")}
			if p.allowDomain == "" {
				p.allowDomain = "--secret-file " + v
			}
			p.setting(name, policy.Settings{Network: policy.NetworkSettings{AllowedDomains: f.Hosts, SecretFiles: []policy.SecretFileSetting{f}}})
			return nil
		},
	},
	{
		names: []string{"--allow-request"}, arg: needArg, placeholder: "'METHODS URL'", section: sectionSandbox, impliesSandbox: true,
		help: []string{
			"Allow requests to URL's host by method and path prefix only",
			"('GET,HEAD https://api.github.com/repos/acme/'; read is GET,",
			"HEAD, OPTIONS; * any): a host with such rules gets only what",
			"they allow; allows the host and implies --network allowlist.",
		},
		set: func(p *parser, name, v string) error {
			methods, u, ok := strings.Cut(strings.TrimSpace(v), " ")
			_, rest, hasScheme := strings.Cut(u, "://")
			host, _, _ := strings.Cut(rest, "/")
			if !ok || methods == "" || !hasScheme || host == "" {
				return fmt.Errorf("%w: --allow-request %q: expected 'METHODS URL', such as 'GET,HEAD https://api.github.com/repos/acme/'", policy.ErrUsage, v)
			}
			if p.allowDomain == "" {
				p.allowDomain = "--allow-request " + v
			}
			p.setting(name, policy.Settings{Network: policy.NetworkSettings{AllowedDomains: []string{host}, Requests: []string{v}}})
			return nil
		},
	},
	{
		names: []string{"--ca-file"}, arg: needArg, placeholder: "PATH", section: sectionSandbox, impliesSandbox: true,
		help: []string{
			"Trust the roots of PEM file PATH, besides the host's, for",
			"the servers of --secret's hosts (a private registry's).",
		},
		set: func(p *parser, name, v string) error {
			abs, err := filepath.Abs(v)
			if err != nil || v == "" {
				return fmt.Errorf("%w: --ca-file %q: expected a file's path", policy.ErrUsage, v)
			}
			p.setting(name, policy.Settings{Network: policy.NetworkSettings{CAFiles: []string{abs}}})
			return nil
		},
	},
	{
		names: []string{"--network-ask"}, section: sectionSandbox, impliesSandbox: true,
		help: []string{
			"With --rpc on stdio: hold a request to a host on no list",
			"and ask the MCP client (elicitation) whether to allow it",
			"once, allow it for this sandbox, or deny it; no answer",
			"within 60 s refuses it, and a client without the",
			"elicitation capability is refused at once. Implies",
			"--network allowlist.",
		},
		set: on(func(o *options) *bool { return &o.networkAsk }),
	},
	{
		names: []string{"--bind"}, arg: needArg, placeholder: "ro:PATH", section: sectionSandbox, impliesSandbox: true,
		help: []string{"Expose PATH read-only."},
		more: []helpForm{
			{"wr:PATH", []string{"Expose PATH read-write."}},
			{"cow:SRC:DST", []string{
				"Copy-on-write: SRC appears at DST; writes go to DST, SRC",
				"never changes.",
			}},
		},
		set: func(p *parser, _, v string) error {
			b, err := policy.ParseBind(v, p.cwd)
			if err != nil {
				return err
			}
			p.o.sandbox.Binds = append(p.o.sandbox.Binds, b)
			return nil
		},
	},
	{
		names: []string{"--in-place"}, section: sectionSandbox, impliesSandbox: true,
		help: []string{
			"Show each cow bind's view at its SRC too, the project at",
			"its own path, and start a command from SRC there, not",
			"in DST (--rpc --try does so; --try in shell mode starts",
			"in DST, as boxsh v3 does). Linux only.",
		},
		set: on(func(o *options) *bool { return &o.sandbox.InPlace }),
	},
	{
		names: []string{"--cache"}, arg: needArg, placeholder: "DIR", section: sectionSandbox, impliesSandbox: true,
		help: []string{
			"Keep tool caches in the host directory DIR across runs:",
			"it is $HOME/.cache inside (XDG_CACHE_HOME), with Go's",
			"module and build caches and npm's cache in it.",
		},
		set: func(p *parser, _, v string) error {
			if v == "" {
				return fmt.Errorf("%w: --cache needs a directory", policy.ErrUsage)
			}
			if !filepath.IsAbs(v) {
				v = filepath.Join(p.cwd, v)
			}
			p.o.sandbox.Cache = filepath.Clean(v)
			return nil
		},
	},

	// Policy options.
	{
		names: []string{"--policy"}, arg: needArg, placeholder: "FILE", section: sectionPolicy,
		help: []string{"A settings file merged after the global and project ones."},
		set:  nonEmpty("file", func(o *options) *string { return &o.policyFile }),
	},
	{
		names: []string{"--env"}, arg: needArg, placeholder: "NAME", section: sectionPolicy,
		help: []string{
			"Pass the host's variable NAME to commands (NAME* passes",
			"the variables it starts, but those that look like",
			"secrets); --env NAME=VALUE sets one.",
		},
		set: func(p *parser, name, v string) error {
			s, err := policy.ParseEnvFlag(v)
			if err != nil {
				return fmt.Errorf("%w: --env %q: %v", policy.ErrUsage, v, err)
			}
			p.setting(name, s)
			return nil
		},
	},
	{
		names: []string{"--timeout-default"}, arg: needArg, placeholder: "S", section: sectionPolicy,
		help: []string{"Timeout, in seconds, of bash calls that give none."},
		set:  limit,
	},
	{
		names: []string{"--max-output"}, arg: needArg, placeholder: "SIZE", section: sectionPolicy,
		help: []string{"Cap on each output stream of a bash call (default 10M)."},
		set:  limit,
	},
	{
		names: []string{"--memory"}, arg: needArg, placeholder: "SIZE", section: sectionPolicy,
		help: []string{"Cap on the data of each command's processes (512M, 2G)."},
		set:  limit,
	},
	{
		names: []string{"--pids"}, arg: needArg, placeholder: "N", section: sectionPolicy,
		help: []string{"Most processes in the sandbox at once (with --sandbox)."},
		set:  limit,
	},
	{
		names: []string{"--cpus"}, arg: needArg, placeholder: "N", section: sectionPolicy,
		help: []string{
			"Processor cores for a sandbox started by root (cgroup);",
			"not enforced rootless.",
		},
		set: limit,
	},
}

// flagIndex is flagTable by each of the names of its flags.
var flagIndex = indexFlags(flagTable)

// indexFlags maps each name of the flags of table to its flag.
func indexFlags(table []flagDef) map[string]*flagDef {
	m := make(map[string]*flagDef)
	for i := range table {
		for _, n := range table[i].names {
			if _, dup := m[n]; dup {
				panic("boxsh: flag " + n + " is defined twice")
			}
			m[n] = &table[i]
		}
	}
	return m
}

// on is the setter of a switch: it sets the field that field gives to true.
func on(field func(*options) *bool) setter {
	return func(p *parser, _, _ string) error {
		*field(&p.o) = true
		return nil
	}
}

// number is the setter of a count from lo to hi, kept in the field that
// field gives.
func number(lo, hi int, field func(*options) *int) setter {
	return func(p *parser, name, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%w: %s %q: expected a number from %d to %d", policy.ErrUsage, name, v, lo, hi)
		}
		*field(&p.o) = n
		return nil
	}
}

// nonEmpty is the setter of a value that cannot be empty, kept in the
// field that field gives; what names the value in the error.
func nonEmpty(what string, field func(*options) *string) setter {
	return func(p *parser, name, v string) error {
		if v == "" {
			return fmt.Errorf("%w: %s needs a %s", policy.ErrUsage, name, what)
		}
		*field(&p.o) = v
		return nil
	}
}

// limit adds a limit flag's settings (see parseLimitFlag).
func limit(p *parser, name, v string) error {
	fs, err := parseLimitFlag(name, v)
	if err != nil {
		return err
	}
	p.o.flagSettings = append(p.o.flagSettings, fs)
	return nil
}
