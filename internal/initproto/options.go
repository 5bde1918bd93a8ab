package initproto

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// boxsh-init's command line, descriptors and paths: the part of the
// contract between the front and boxsh-init that is not frames. The front
// writes the arguments with InitOptions.Args, boxsh-init reads them with
// ParseInitOptions; nothing else spells them. The command line of a
// boxsh-init serving calls has the options it had at protocol 1, no more:
// those added since travel in the front's hello (see Setup).

// Descriptors boxsh-init finds open when it starts.
const (
	// ChannelFD is the frame socket of boxsh-init serving calls (the
	// default of --fd).
	ChannelFD = 3
	// LifelineFD is, with --exec, the read end of the lifeline pipe. The
	// front holds the only write end. boxsh-init exits, ending the
	// sandbox, when it reads end of file.
	LifelineFD = 3
	// ProxyFD is the socket to the front's network proxy (allowlist
	// network policy), after the channel or the lifeline.
	ProxyFD = 4
)

// Paths inside the sandbox.
const (
	// BoxshDir is the directory of boxsh's own files in the sandbox.
	BoxshDir = "/.boxsh"
	// InitMountPath is where the host's boxsh-init is bound.
	InitMountPath = BoxshDir + "/boxsh-init"
	// ForkServerMountPath is where the host's fork-server library is
	// bound: beside boxsh-init, where it looks for it.
	ForkServerMountPath = BoxshDir + "/boxsh-zygote.so"
	// RulesPath is the policy's rules file, written into the root (see
	// InitOptions.RulesFile).
	RulesPath = BoxshDir + "/rules.json"
	// GitExcludesPath is the git excludes file written into the root. In
	// it, the sandbox's git finds the placeholders of missing protected
	// files (see plan.PlaceholderExcludes).
	GitExcludesPath = BoxshDir + "/gitignore"
	// ResolvConfPath is the sandbox's resolv.conf under an allowlist
	// network policy, written into the root and bound on
	// /etc/resolv.conf. It names boxsh-init's name service.
	ResolvConfPath = BoxshDir + "/resolv.conf"
)

// ProxyListen is where commands in an allowlist sandbox reach the network
// proxy. It is boxsh-init's forwarder on the sandbox's loopback, and the
// default of --proxy-listen.
const ProxyListen = "127.0.0.1:3128"

// Defaults of boxsh-init's options.
const (
	DefaultWorkers  = 4
	DefaultShell    = "/bin/sh"
	DefaultLogLevel = "warn"
)

// ExecFlag is boxsh-init's first argument when it runs one command instead of
// serving calls. The command is the shell of shell mode, or the command after
// --.
const ExecFlag = "--exec"

// InitOptions are boxsh-init's options.
//
// By default boxsh-init serves calls on a frame socket. With Exec, it runs
// Command as a minimal init.
type InitOptions struct {
	// Exec runs Command instead of serving calls; only Lifeline and the
	// proxy options apply then.
	Exec    bool
	Command []string
	// Lifeline is the descriptor of the lifeline pipe (0: none; Exec
	// only, see LifelineFD).
	Lifeline int

	// Workers and Shell configure the worker pool (0 and "": the
	// defaults); LogLevel is the log level ("": the default).
	Workers  int
	Shell    string
	LogLevel string
	// FD is the descriptor of the frame socket (0: ChannelFD).
	FD int
	// TimeoutDefault is the bash timeout of calls that give none, in
	// seconds; 0 is none. MaxOutput caps each output stream; 0 is 10 MiB.
	TimeoutDefault float64
	MaxOutput      int64
	// Memory caps the data of each command's processes, and Pids the
	// sandbox's tasks for commands (0: none).
	Memory int64
	Pids   int
	// RulesFile is the list of the policy's covered paths, for the file
	// tools' messages ("": none).
	RulesFile string

	// ProxyFD is the descriptor of the socket to the front's network
	// proxy, or 0 for none. boxsh-init exposes the proxy on ProxyListen;
	// "" is the default ProxyListen.
	ProxyFD     int
	ProxyListen string
	// EgressPorts are the ports boxsh-init captures on the addresses its
	// name service gives (see netfwd.Egress): the ports the policy may
	// allow. None: no capture, and no name service. When serving calls,
	// they are in the front's hello (see Setup), not on the command line.
	EgressPorts []uint16
	// ForwardFD is the descriptor of the forwarding socket, or 0 for none.
	// The front opens a stream on it per connection to a port it exposes
	// (see ForwardHeader). When serving calls, it is in the front's hello
	// (see Setup), not on the command line.
	ForwardFD int
}

// Setup returns what the front's hello tells a boxsh-init serving calls with
// options o: the options its command line does not carry.
func (o InitOptions) Setup() Setup {
	return Setup{ForwardFD: o.ForwardFD, EgressPorts: o.EgressPorts}
}

// Args are boxsh-init's arguments for o (after its path). A server's
// always name the number of workers and the log level (the defaults when
// unset), so that the command line says how it runs, and leave out what
// its hello carries (Setup).
func (o InitOptions) Args() []string {
	if o.Exec {
		var args []string
		args = append(args, ExecFlag)
		if o.Lifeline > 0 {
			args = append(args, "--lifeline", strconv.Itoa(o.Lifeline))
		}
		args = append(args, o.proxyArgs()...)
		if o.ProxyFD > 0 && len(o.EgressPorts) > 0 {
			args = append(args, "--egress-ports", FormatPorts(o.EgressPorts))
		}
		if o.ForwardFD > 0 {
			args = append(args, "--forward-fd", strconv.Itoa(o.ForwardFD))
		}
		return append(append(args, "--"), o.Command...)
	}
	workers := o.Workers
	if workers == 0 {
		workers = DefaultWorkers
	}
	args := []string{"--workers", strconv.Itoa(workers)}
	if o.Shell != "" {
		args = append(args, "--shell", o.Shell)
	}
	level := o.LogLevel
	if level == "" {
		level = DefaultLogLevel
	}
	args = append(args, "--log-level", level)
	if o.FD > 0 && o.FD != ChannelFD {
		args = append(args, "--fd", strconv.Itoa(o.FD))
	}
	if o.TimeoutDefault > 0 {
		args = append(args, "--timeout-default", strconv.FormatFloat(o.TimeoutDefault, 'g', -1, 64))
	}
	if o.MaxOutput > 0 {
		args = append(args, "--max-output", strconv.FormatInt(o.MaxOutput, 10))
	}
	if o.Memory > 0 {
		args = append(args, "--memory", strconv.FormatInt(o.Memory, 10))
	}
	if o.Pids > 0 {
		args = append(args, "--pids", strconv.Itoa(o.Pids))
	}
	if o.RulesFile != "" {
		args = append(args, "--rules", o.RulesFile)
	}
	return append(args, o.proxyArgs()...)
}

// proxyArgs are the arguments that expose the proxy.
func (o InitOptions) proxyArgs() []string {
	if o.ProxyFD <= 0 {
		return nil
	}
	listen := o.ProxyListen
	if listen == "" {
		listen = ProxyListen
	}
	return []string{"--proxy-fd", strconv.Itoa(o.ProxyFD), "--proxy-listen", listen}
}

// ParseInitOptions parses boxsh-init's arguments (after its path), as Args
// writes them.
//
// It fills in the defaults: Workers, Shell, LogLevel, FD, and ProxyListen when
// there is a ProxyFD. When serving calls, it takes and ignores --forward-fd,
// which a front of an older build passes; such a front is refused at the
// hello, naming both builds.
func ParseInitOptions(args []string) (InitOptions, error) {
	if len(args) > 0 && args[0] == ExecFlag {
		return parseExec(args[1:])
	}
	var o InitOptions
	fs := flag.NewFlagSet("boxsh-init", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.Workers, "workers", DefaultWorkers, "bash commands that run at once")
	fs.StringVar(&o.Shell, "shell", DefaultShell, "shell that runs commands")
	fs.StringVar(&o.LogLevel, "log-level", DefaultLogLevel, "log level")
	fs.IntVar(&o.FD, "fd", ChannelFD, "descriptor of the frame socket")
	fs.Float64Var(&o.TimeoutDefault, "timeout-default", 0, "bash timeout in seconds of calls that give none (0: none)")
	fs.Int64Var(&o.MaxOutput, "max-output", 0, "cap on each output stream of a bash call, in bytes (0: 10 MiB)")
	fs.Int64Var(&o.Memory, "memory", 0, "cap on the data of each command's processes, in bytes (0: none)")
	fs.IntVar(&o.Pids, "pids", 0, "cap on the tasks of the sandbox's user, for commands (0: none)")
	fs.StringVar(&o.RulesFile, "rules", "", "the policy's rules, for the file tools' messages (JSON)")
	fs.IntVar(&o.ProxyFD, "proxy-fd", 0, "descriptor of the socket to the front's network proxy (0: none)")
	fs.StringVar(&o.ProxyListen, "proxy-listen", ProxyListen, "where commands reach the proxy")
	fs.Int("forward-fd", 0, "ignored: the front's hello names the socket of its exposed ports")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.Workers < 1 {
		return o, fmt.Errorf("--workers %d: expected at least 1", o.Workers)
	}
	if o.ProxyFD == 0 {
		o.ProxyListen = ""
	}
	return o, nil
}

// parseExec parses the arguments after --exec: [--lifeline FD]
// [--proxy-fd FD [--proxy-listen ADDR] [--egress-ports P,...]]
// [--forward-fd FD] [--] CMD ARGS...
func parseExec(argv []string) (InitOptions, error) {
	o := InitOptions{Exec: true}
	for len(argv) > 1 && (argv[0] == "--lifeline" || argv[0] == "--proxy-fd" || argv[0] == "--proxy-listen" || argv[0] == "--egress-ports" || argv[0] == "--forward-fd") {
		switch argv[0] {
		case "--proxy-listen":
			o.ProxyListen = argv[1]
		case "--egress-ports":
			ports, err := ParsePorts(argv[1])
			if err != nil {
				return o, fmt.Errorf("--egress-ports: %w", err)
			}
			o.EgressPorts = ports
		default:
			fd, err := strconv.Atoi(argv[1])
			if err != nil || fd < 3 {
				return o, fmt.Errorf("%s %q: expected a descriptor number", argv[0], argv[1])
			}
			switch argv[0] {
			case "--lifeline":
				o.Lifeline = fd
			case "--forward-fd":
				o.ForwardFD = fd
			default:
				o.ProxyFD = fd
			}
		}
		argv = argv[2:]
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return o, errors.New("--exec needs a command")
	}
	o.Command = argv
	switch {
	case o.ProxyFD == 0:
		o.ProxyListen, o.EgressPorts = "", nil
	case o.ProxyListen == "":
		o.ProxyListen = ProxyListen
	}
	return o, nil
}

// FormatPorts writes ports as --egress-ports takes them: "22,80,443".
func FormatPorts(ports []uint16) string {
	b := make([]byte, 0, 6*len(ports))
	for i, p := range ports {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(p), 10)
	}
	return string(b)
}

// ParsePorts parses FormatPorts's form: ports from 1 to 65535, separated by
// commas.
func ParsePorts(s string) ([]uint16, error) {
	var ports []uint16
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.ParseUint(f, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("bad port %q: expected a number from 1 to 65535", f)
		}
		ports = append(ports, uint16(n))
	}
	return ports, nil
}
