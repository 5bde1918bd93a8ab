package main

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
)

func TestParseArgs(t *testing.T) {
	o, err := parseArgs([]string{"--rpc", "--workers", "8", "--shell=/bin/bash", "--sandbox", "--new-net-ns", "--bind", "ro:/usr", "--log-level", "debug"}, "/")
	require.NoError(t, err)
	assert.Equal(t, modeRPC, o.mode)
	assert.Equal(t, 8, o.workers)
	assert.Equal(t, "/bin/bash", o.shell)
	assert.Equal(t, "debug", o.logLevel)
	assert.True(t, o.sandbox.Enabled)
	assert.True(t, o.sandbox.NewNetNS)
	assert.Equal(t, []policy.Bind{{Mode: policy.ReadOnly, Src: "/usr", Dst: "/usr"}}, o.sandbox.Binds)

	o, err = parseArgs([]string{"-c", "echo $1", "sh", "--rpc"}, "/")
	require.NoError(t, err)
	assert.Equal(t, modeShell, o.mode)
	assert.Equal(t, []string{"-c", "echo $1", "sh", "--rpc"}, o.args, "everything from the first shell argument on goes to the shell")

	o, err = parseArgs([]string{"--sandbox", "--", "npx", "-y", "server"}, "/")
	require.NoError(t, err)
	assert.Equal(t, modeCommand, o.mode)
	assert.Equal(t, []string{"npx", "-y", "server"}, o.args)

	o, err = parseArgs([]string{"--interactive"}, "/")
	require.NoError(t, err)
	assert.True(t, o.interactive)
	assert.Empty(t, o.args)

	o, err = parseArgs(nil, "/")
	require.NoError(t, err)
	assert.Equal(t, modeShell, o.mode)
	assert.Equal(t, 4, o.workers)
	assert.Equal(t, "/bin/sh", o.shell)

	o, _ = parseArgs([]string{"--help", "--bogus"}, "/")
	assert.Equal(t, modeHelp, o.mode)
	o, _ = parseArgs([]string{"--version"}, "/")
	assert.Equal(t, modeVersion, o.mode)
}

func TestParseArgsErrors(t *testing.T) {
	for _, argv := range [][]string{
		{"--workers"}, {"--workers", "0"}, {"--workers", "x"}, {"--workers=2000"},
		{"--shell", ""}, {"--bind"}, {"--"}, {"--rpc", "--", "cmd"},
		{"--rpc", "script.sh"}, {"--frobnicate"}, {"--sandbox", "--frobnicate=1", "-c", "true"},
	} {
		_, err := parseArgs(argv, "/")
		assert.ErrorIs(t, err, policy.ErrUsage, "%q", argv)
	}
	_, err := parseArgs([]string{"--frobnicate"}, "/")
	assert.ErrorContains(t, err, "unknown option --frobnicate")
	assert.ErrorContains(t, err, "boxsh -- /bin/sh --frobnicate", "says where a shell's own option goes")
	// As boxsh v3, a bad --bind value exits with 1, not 2.
	_, err = parseArgs([]string{"--bind", "bogus:/x"}, "/")
	assert.ErrorIs(t, err, policy.ErrBind)
}

func TestParseListen(t *testing.T) {
	for argv, want := range map[string]string{
		"--rpc --listen":                   "127.0.0.1:0",
		"--rpc --listen --workers 2":       "127.0.0.1:0",
		"--rpc --listen 8080":              "127.0.0.1:8080",
		"--rpc --listen=0.0.0.0:9000":      "0.0.0.0:9000",
		"--rpc --listen [::1]:0 --no-auth": "[::1]:0",
		"--rpc --listen unix:/run/b.sock":  "unix:/run/b.sock",
		"--rpc --listen=unix:rel.sock":     "unix:rel.sock",
	} {
		o, err := parseArgs(strings.Fields(argv), "/")
		require.NoError(t, err, argv)
		assert.Equal(t, want, o.listen, argv)
	}
	o, err := parseArgs([]string{"--rpc", "--listen", "--token-file", "/t"}, "/")
	require.NoError(t, err)
	assert.Equal(t, "/t", o.tokenFile)
	for _, argv := range []string{"--listen", "--token-file /t", "--rpc --no-auth --token-file /t"} {
		_, err := parseArgs(strings.Fields(argv), "/")
		assert.ErrorIs(t, err, policy.ErrUsage, argv)
	}
}

// TestParseArgsSandboxFlagsImplySandbox checks that sandbox flags without
// --sandbox turn the sandbox on (issue 24). A restriction the user asked
// for is never ignored.
func TestParseArgsSandboxFlagsImplySandbox(t *testing.T) {
	for _, argv := range [][]string{
		{"--bind", "ro:/usr", "-c", "true"},
		{"--network", "disabled", "-c", "true"},
		{"--network", "allow_all", "-c", "true"},
		{"--new-net-ns", "-c", "true"},
		{"--allow-domain", "example.com", "-c", "true"},
		{"--cache", "/tmp", "-c", "true"},
		{"--rpc", "--bind", "wr:/tmp"},
		{"--bind", "ro:/usr", "--", "true"},
	} {
		o, err := parseArgs(argv, "/")
		require.NoError(t, err, "%q", argv)
		assert.True(t, o.sandbox.Enabled, "%q", argv)
		want := argv[0]
		if want == "--rpc" {
			want = argv[1]
		}
		assert.Equal(t, want, o.impliedBy, "%q", argv)
	}
	for _, argv := range [][]string{{"-c", "true"}, {"--env", "FOO", "-c", "true"}, {"--memory", "1G", "--rpc"}} {
		o, err := parseArgs(argv, "/")
		require.NoError(t, err, "%q", argv)
		assert.False(t, o.sandbox.Enabled, "%q", argv)
	}
}

// TestParseArgsAllowDomainMode checks that --allow-domain means the
// allowlist, and is refused with another mode.
func TestParseArgsAllowDomainMode(t *testing.T) {
	mode := func(o options) string {
		m := ""
		for _, fs := range o.flagSettings {
			if fs.settings.Network.Mode != "" {
				m = fs.settings.Network.Mode
			}
		}
		return m
	}
	o, err := parseArgs([]string{"--allow-domain", "example.com"}, "/")
	require.NoError(t, err)
	assert.Equal(t, policy.NetworkAllowlist, mode(o))
	o, err = parseArgs([]string{"--allow-domain", "example.com", "--network", "allowlist"}, "/")
	require.NoError(t, err)
	assert.Equal(t, policy.NetworkAllowlist, mode(o))
	for _, argv := range [][]string{
		{"--allow-domain", "example.com", "--network", "disabled"},
		{"--network", "allow_all", "--allow-domain", "example.com"},
		{"--new-net-ns", "--allow-domain", "example.com"},
	} {
		_, err := parseArgs(argv, "/")
		require.ErrorIs(t, err, policy.ErrUsage, "%q", argv)
		assert.Contains(t, err.Error(), "needs --network allowlist", "%q", argv)
	}
}

func TestParseArgsEnv(t *testing.T) {
	o, err := parseArgs([]string{"--env", "GOFLAGS", "--env=CI=true", "--env", "NPM_CONFIG_*", "--env", "EMPTY="}, "/")
	require.NoError(t, err)
	var got []policy.Settings
	for _, fs := range o.flagSettings {
		assert.Equal(t, "--env", fs.flag)
		got = append(got, fs.settings)
	}
	assert.Equal(t, []policy.Settings{
		{Environment: policy.EnvironmentSettings{Pass: []string{"GOFLAGS"}}},
		{Environment: policy.EnvironmentSettings{Set: map[string]string{"CI": "true"}}},
		{Environment: policy.EnvironmentSettings{Pass: []string{"NPM_CONFIG_*"}}},
		{Environment: policy.EnvironmentSettings{Set: map[string]string{"EMPTY": ""}}},
	}, got)
	for _, v := range []string{"", "1X", "A-B", "*", "X*=1", "=v", "A B=1"} {
		_, err := parseArgs([]string{"--env", v}, "/")
		require.ErrorIs(t, err, policy.ErrUsage, "%q", v)
		assert.Contains(t, err.Error(), "not a variable name", "%q", v)
	}
}

// TestPublishAll checks --publish's line. It says where each port is, and
// that a shared network's port is the host's own. A port that cannot be had
// is named.
func TestPublishAll(t *testing.T) {
	var out strings.Builder
	expose := func(port, hostPort int) (tool.PortInfo, error) {
		if port == 9 {
			return tool.PortInfo{}, errors.New("listen on the host: taken")
		}
		return tool.PortInfo{Port: port, HostPort: 4000, Address: "127.0.0.1:4000"}, nil
	}
	require.NoError(t, publishAll([]publish{{port: 80}}, expose, false, &out))
	assert.Equal(t, "boxsh: port 80 of the sandbox published at 127.0.0.1:4000\n", out.String())
	out.Reset()
	require.NoError(t, publishAll([]publish{{port: 80}}, expose, true, &out))
	assert.Equal(t, "boxsh: port 80 of the sandbox published at 127.0.0.1:4000 (the sandbox shares the host's network: its port 80 is the host's own 127.0.0.1:80 too)\n", out.String())
	err := publishAll([]publish{{port: 80}, {port: 9, hostPort: 22}}, expose, false, io.Discard)
	assert.EqualError(t, err, "--publish 9: listen on the host: taken")
	o, err := parseArgs([]string{"--sandbox", "--publish", "8000", "-c", "true"}, "/")
	require.NoError(t, err)
	assert.Equal(t, []publish{{port: 8000}}, o.publish)
}

// TestParseServerID checks that --server-id names the server, with
// --sandboxes only; by default $POD_NAME, else the host name.
func TestParseServerID(t *testing.T) {
	o, err := parseArgs([]string{"--rpc", "--listen", "--sandboxes", "--server-id", "boxsh-2"}, "/")
	require.NoError(t, err)
	assert.Equal(t, "boxsh-2", serverID(o))
	_, err = parseArgs([]string{"--rpc", "--listen", "--server-id", "x"}, "/")
	assert.ErrorContains(t, err, "--server-id go with --sandboxes")
	_, err = parseArgs([]string{"--rpc", "--listen", "--sandboxes", "--server-id="}, "/")
	assert.ErrorContains(t, err, "expected a name on one line")
	o, err = parseArgs([]string{"--rpc", "--listen", "--sandboxes"}, "/")
	require.NoError(t, err)
	t.Setenv("POD_NAME", "boxsh-0")
	assert.Equal(t, "boxsh-0", serverID(o))
	t.Setenv("POD_NAME", "")
	host, _ := os.Hostname()
	assert.Equal(t, host, serverID(o))
}

// TestParseSandboxBounds checks that --sandbox-requests and
// --sandbox-forwards take a number from 1 to 10000, and go with
// --sandboxes.
func TestParseSandboxBounds(t *testing.T) {
	o, err := parseArgs([]string{"--rpc", "--listen", "--sandboxes", "--sandbox-requests", "8", "--sandbox-forwards=3"}, "/")
	require.NoError(t, err)
	assert.Equal(t, 8, o.sandboxRequests)
	assert.Equal(t, 3, o.sandboxForwards)
	_, err = parseArgs([]string{"--rpc", "--listen", "--sandbox-requests", "8"}, "/")
	assert.ErrorContains(t, err, "--sandbox-requests, --sandbox-forwards, --warm-sandboxes and --server-id go with --sandboxes")
	for _, bad := range []string{"0", "-1", "10001", "x"} {
		_, err = parseArgs([]string{"--rpc", "--listen", "--sandboxes", "--sandbox-forwards", bad}, "/")
		assert.ErrorContains(t, err, `--sandbox-forwards "`+bad+`": expected a number from 1 to 10000`)
	}
}
