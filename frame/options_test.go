package frame

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
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseInitOptions(o.Args())
			require.NoError(t, err, "%q", o.Args())
			assert.Equal(t, o, got, "%q", o.Args())
		})
	}
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
