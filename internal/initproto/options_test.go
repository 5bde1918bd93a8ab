package initproto

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInitOptionsRoundTrip(t *testing.T) {
	for name, o := range map[string]InitOptions{
		"defaults": {Workers: DefaultWorkers, Shell: DefaultShell, LogLevel: DefaultLogLevel, FD: ChannelFD},
		"all": {Workers: 7, Shell: "/bin/bash", LogLevel: "debug", FD: 5, TimeoutDefault: 1.5, MaxOutput: 1 << 20,
			Memory: 64 << 20, Pids: 100, RulesFile: RulesPath, ProxyFD: ProxyFD, ProxyListen: "127.0.0.1:9"},
		"proxy default listen": {Workers: 1, Shell: DefaultShell, LogLevel: "info", FD: ChannelFD, ProxyFD: ProxyFD, ProxyListen: ProxyListen},
		"exec":                 {Exec: true, Command: []string{"sh", "-c", "echo --workers"}},
		"exec lifeline":        {Exec: true, Lifeline: LifelineFD, Command: []string{"--", "x"}},
		"exec proxy": {Exec: true, Lifeline: LifelineFD, ProxyFD: ProxyFD, ProxyListen: ProxyListen,
			Command: []string{"curl", "--proxy-fd", "9"}},
		"exec forward": {Exec: true, Lifeline: LifelineFD, ForwardFD: 4, Command: []string{"sh"}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseInitOptions(o.Args())
			require.NoError(t, err, "%q", o.Args())
			assert.Equal(t, o, got, "%q", o.Args())
		})
	}
}

// protocol1Flags are the options of a boxsh-init serving calls at
// protocol 1, the only ones a boxsh-init of an older build is sure to
// know.
var protocol1Flags = []string{"--workers", "--shell", "--log-level", "--fd", "--timeout-default", "--max-output",
	"--memory", "--pids", "--rules", "--proxy-fd", "--proxy-listen"}

// A boxsh-init serving calls gets only the options of protocol 1 on its
// command line, whatever it is given: one of an older build must get as
// far as its hello, which names its build. The rest is in the front's
// hello (Setup).
func TestInitOptionsArgsOfProtocol1(t *testing.T) {
	o := InitOptions{Workers: 7, Shell: "/bin/bash", LogLevel: "debug", FD: 5, TimeoutDefault: 1.5, MaxOutput: 1 << 20,
		Memory: 64 << 20, Pids: 100, RulesFile: RulesPath, ProxyFD: ProxyFD, ProxyListen: "127.0.0.1:9", ForwardFD: 5}
	args := o.Args()
	for i := 0; i < len(args); i += 2 {
		assert.Contains(t, protocol1Flags, args[i], "%q: an option a boxsh-init of an older build refuses; put it in Setup", args)
	}
	assert.Equal(t, Setup{ForwardFD: 5}, o.Setup())
	got, err := ParseInitOptions(append(args, "--forward-fd", "5"))
	require.NoError(t, err, "the option of an older front is taken")
	o.ForwardFD = 0
	assert.Equal(t, o, got, "and ignored: the hello names the forwarding socket")
	assert.Equal(t, []string{"--exec", "--lifeline", "3", "--forward-fd", "5", "--", "sh"},
		InitOptions{Exec: true, Lifeline: 3, ForwardFD: 5, Command: []string{"sh"}}.Args(), "--exec has no hello")
}

func TestInitOptionsArgs(t *testing.T) {
	assert.Equal(t, []string{"--workers", "4", "--log-level", "warn"}, InitOptions{}.Args(), "the defaults are named")
	assert.Equal(t, []string{"--workers", "2", "--shell", "/bin/bash", "--log-level", "debug", "--rules", RulesPath, "--proxy-fd", "4", "--proxy-listen", ProxyListen},
		InitOptions{Workers: 2, Shell: "/bin/bash", LogLevel: "debug", RulesFile: RulesPath, ProxyFD: ProxyFD}.Args())
	assert.Equal(t, []string{"--exec", "--lifeline", "3", "--", "sh"}, InitOptions{Exec: true, Lifeline: 3, Command: []string{"sh"}}.Args())
}

func TestParseInitOptionsErrors(t *testing.T) {
	for _, bad := range [][]string{
		{"--workers", "x"}, {"--workers", "0"}, {"--nope"}, {"extra"},
		{"--exec"}, {"--exec", "--"}, {"--exec", "--lifeline", "x", "true"}, {"--exec", "--lifeline", "1", "true"}, {"--exec", "--proxy-fd", "2", "true"},
	} {
		_, err := ParseInitOptions(bad)
		assert.Error(t, err, "%q", bad)
	}
	o, err := ParseInitOptions([]string{"--exec", "true"})
	require.NoError(t, err)
	assert.Equal(t, InitOptions{Exec: true, Command: []string{"true"}}, o, "the options of --exec are optional")
}

// The captured ports go on the command line of --exec, and in the hello of
// a server.
func TestEgressPortsOptions(t *testing.T) {
	o := InitOptions{Exec: true, Command: []string{"sh"}, ProxyFD: ProxyFD, EgressPorts: []uint16{22, 80, 443, 8443}}
	args := o.Args()
	assert.Equal(t, []string{"--exec", "--proxy-fd", "4", "--proxy-listen", ProxyListen, "--egress-ports", "22,80,443,8443", "--", "sh"}, args)
	got, err := ParseInitOptions(args)
	require.NoError(t, err)
	assert.Equal(t, o.EgressPorts, got.EgressPorts)

	_, err = ParseInitOptions([]string{"--exec", "--proxy-fd", "4", "--egress-ports", "22,0", "--", "sh"})
	assert.ErrorContains(t, err, `bad port "0"`)
	_, err = ParseInitOptions([]string{"--exec", "--proxy-fd", "4", "--egress-ports", "22,x", "--", "sh"})
	assert.Error(t, err)
	got, err = ParseInitOptions([]string{"--exec", "--egress-ports", "22", "--", "sh"})
	require.NoError(t, err)
	assert.Empty(t, got.EgressPorts, "no proxy, no capture")

	serve := InitOptions{ProxyFD: ProxyFD, EgressPorts: []uint16{22}}
	assert.NotContains(t, serve.Args(), "--egress-ports")
	assert.Equal(t, Setup{EgressPorts: []uint16{22}}, serve.Setup())
	s, err := DecodeSetup(EncodeFrontHello(NewHello("b"), serve.Setup()))
	require.NoError(t, err)
	assert.Equal(t, serve.Setup(), s)
}
