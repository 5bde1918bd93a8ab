package main

import (
	"fmt"
	"io"
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
	// serverID is --server-id: the server's name in its answers.
	serverID string
	// sandboxDisk is --sandbox-disk: each sandbox's writable layer's
	// bound, in bytes (0: none).
	sandboxDisk int64
	// sandboxRequests is --sandbox-requests and sandboxForwards
	// --sandbox-forwards: each sandbox's bounds on HTTP requests in
	// flight and on exposed ports (0: the defaults).
	sandboxRequests, sandboxForwards int
	// networkAsk is --network-ask: the stdio client is asked about a
	// destination on no list.
	networkAsk bool
	// audit is --audit FILE; noAudit --no-audit (see auditPath).
	audit   string
	noAudit bool
	// args are the shell's arguments (modeShell) or the command
	// (modeCommand).
	args []string
	// impliedBy is the first flag that asks for a sandbox without
	// --sandbox: a --bind, a network flag or --cache. Such a flag turns
	// the sandbox on, so that no restriction the user asked for is
	// ignored.
	impliedBy string
}

// parseArgs parses boxsh's own options, which come first. The options are
// those of flagTable. The first argument that is not one of them (such as
// -c or a script name) and everything after it belong to the shell.
// Everything after "--" is a command to run.
//
// The parser is boxsh's own, not a flag library's. boxsh v3.0.0 used
// getopt_long("+") with unknown options handed back. So a short option
// that is not boxsh's (-c, -e, -ic) ends boxsh's options and goes to the
// shell with everything after it. The libraries differ:
//   - pflag refuses such an option or, told to ignore unknown flags, drops
//     it from the shell's arguments;
//   - the standard library's flag refuses it too, and takes -sandbox for
//     --sandbox;
//   - neither takes --listen's optional address as the next argument
//     (--listen 8080), nor ignores a switch's "=VALUE" (--sandbox=1), as
//     boxsh does.
func parseArgs(argv []string, cwd string) (options, error) {
	p := &parser{o: options{mode: modeShell, workers: 4, shell: "/bin/sh"}, cwd: cwd}
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		name, value, hasValue := arg, "", false
		if strings.HasPrefix(arg, "--") {
			name, value, hasValue = strings.Cut(arg, "=")
		}
		f, ok := flagIndex[name]
		if !ok {
			if strings.HasPrefix(arg, "--") {
				// A long option that is none of boxsh's: a typo, or a
				// shell's own, which goes after -- (boxsh -- bash --login).
				return p.o, fmt.Errorf("%w: unknown option %s; a shell's own long option goes after --: boxsh -- %s %s", policy.ErrUsage, name, p.o.shell, arg)
			}
			// Not ours: this and the rest go to the shell.
			p.o.args = argv[i:]
			break
		}
		var v string
		switch f.arg {
		case noArg:
			// A value given with "=" is ignored.
		case needArg:
			switch {
			case hasValue:
				v = value
			case i+1 < len(argv):
				i++
				v = argv[i]
			default:
				return p.o, fmt.Errorf("%w: %s needs a value", policy.ErrUsage, name)
			}
		case optionalArg:
			v = f.def
			switch {
			case hasValue:
				v = value
			case i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-"):
				i++
				v = argv[i]
			}
		case restArgs:
			p.o.args = argv[i+1:]
		}
		if err := f.set(p, name, v); err != nil {
			return p.o, err
		}
		if f.impliesSandbox && p.o.impliedBy == "" {
			p.o.impliedBy = name
		}
		if f.stop {
			return p.o, nil
		}
		if f.arg == restArgs {
			break
		}
	}
	err := p.check()
	return p.o, err
}

// parser is a command line being parsed.
type parser struct {
	o   options
	cwd string
	rpc bool
	// networkFlag is the flag that named a network mode (--network MODE
	// or --new-net-ns), allowDomain the first --allow-domain (or
	// --secret, as "--secret NAME=HOSTS").
	networkFlag, networkMode, allowDomain string
}

// setting adds the settings s that flag gives.
func (p *parser) setting(flag string, s policy.Settings) {
	p.o.flagSettings = append(p.o.flagSettings, flagSetting{flag: flag, settings: s})
}

// check applies the rules between flags to the parsed command line, and
// what follows from them.
func (p *parser) check() error {
	o := &p.o
	// --allow-domain means the allowlist: it names the mode when no flag
	// does, and contradicts another mode.
	if p.allowDomain != "" {
		switch p.networkMode {
		case "":
			p.setting(strings.Fields(p.allowDomain)[0], policy.Settings{Network: policy.NetworkSettings{Mode: policy.NetworkAllowlist}})
		case policy.NetworkAllowlist:
		default:
			return fmt.Errorf("%w: %s needs --network allowlist, not %s", policy.ErrUsage, p.allowDomain, p.networkFlag)
		}
	}
	if o.networkAsk {
		switch {
		case !p.rpc || o.listen != "" || o.sandboxes:
			return fmt.Errorf("%w: --network-ask goes with --rpc on stdio (the client asked is the one of stdin and stdout), not with --listen or --sandboxes", policy.ErrUsage)
		case p.networkMode == "" && p.allowDomain == "":
			p.setting("--network-ask", policy.Settings{Network: policy.NetworkSettings{Mode: policy.NetworkAllowlist}})
		case p.networkMode != "" && p.networkMode != policy.NetworkAllowlist:
			return fmt.Errorf("%w: --network-ask needs --network allowlist, not %s", policy.ErrUsage, p.networkFlag)
		}
	}
	if o.impliedBy != "" {
		o.sandbox.Enabled = true
	}
	if !p.rpc && (o.listen != "" || o.tokenFile != "" || o.noAuth) {
		return fmt.Errorf("%w: --listen, --token-file and --no-auth go with --rpc", policy.ErrUsage)
	}
	if o.noAudit && o.audit != "" {
		return fmt.Errorf("%w: --audit and --no-audit exclude each other", policy.ErrUsage)
	}
	if (o.maxSandboxes != 0 || o.sandboxIdle != 0 || o.warmSandboxes != 0 || o.sandboxDisk != 0 || o.sandboxRequests != 0 || o.sandboxForwards != 0 || o.serverID != "") && !o.sandboxes {
		return fmt.Errorf("%w: --max-sandboxes, --sandbox-idle, --sandbox-disk, --sandbox-requests, --sandbox-forwards, --warm-sandboxes and --server-id go with --sandboxes", policy.ErrUsage)
	}
	if o.sandboxes {
		switch {
		case !p.rpc || o.listen == "":
			return fmt.Errorf("%w: --sandboxes goes with --rpc --listen", policy.ErrUsage)
		case o.sandbox.Try:
			return fmt.Errorf("%w: --sandboxes and --try exclude each other: every sandbox of --sandboxes is a copy-on-write session already", policy.ErrUsage)
		case len(o.publish) > 0:
			return fmt.Errorf("%w: --sandboxes and --publish exclude each other: a sandbox's client exposes its ports with the expose tool", policy.ErrUsage)
		}
		o.sandbox.Enabled = true
	}
	if o.noAuth && o.tokenFile != "" {
		return fmt.Errorf("%w: --no-auth and --token-file exclude each other", policy.ErrUsage)
	}
	if o.sandbox.InPlace && goruntime.GOOS == "darwin" {
		return fmt.Errorf("%w: --in-place needs Linux: macOS has no mounts to show a cow bind's view at its SRC", policy.ErrUsage)
	}
	if p.rpc && o.sandbox.Try && goruntime.GOOS != "darwin" {
		// An agent's session shows the project at its own path.
		o.sandbox.InPlace = true
	}
	if p.rpc && o.mode != modeCommand {
		o.mode = modeRPC
		if len(o.args) > 0 {
			return fmt.Errorf("%w: unexpected argument %q in --rpc mode", policy.ErrUsage, o.args[0])
		}
	}
	return nil
}

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
// wr bind or a cow destination shows. It returns nil without a sandbox,
// where commands can write anything the user can anyway.
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
