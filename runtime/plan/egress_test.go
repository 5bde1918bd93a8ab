package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/policy"
)

func TestEgressPorts(t *testing.T) {
	var rules []policy.Rule
	for _, v := range []string{"github.com", "*.example.com:8443", "git.example.org:22", "10.0.0.1:5432", "[::1]:6379", "::1", "[::1]", "bad:port", "x:0", "y:70000"} {
		rules = append(rules, policy.Rule{Value: v})
	}
	assert.Equal(t, []uint16{22, 80, 443, 5432, 6379, 8443}, egressPorts(policy.Policy{AllowedDomains: rules}))
	assert.Equal(t, []uint16{22, 80, 443}, egressPorts(policy.Policy{}))
}

// Under an allowlist policy, boxsh-init captures the ports and the
// sandbox's resolver names its name service; under another, the host's
// resolv.conf stays.
func TestPlanEgress(t *testing.T) {
	allowlist := policy.Policy{NetworkMode: set(policy.NetworkAllowlist), AllowedDomains: []policy.Rule{{Value: "git.example.com:2222"}}}
	withResolv := planHost
	withResolv.Etc = append(append([]HostPath(nil), planHost.Etc...), HostPath{Path: resolvConf})

	cfg := planConfig(ModeServe, TargetStart)
	cfg.Policy, cfg.Sandbox.NewNetNS, cfg.Host = allowlist, true, withResolv
	p, err := Build(cfg)
	require.NoError(t, err)
	assert.Equal(t, []uint16{22, 80, 443, 2222}, p.Setup.EgressPorts, "in the hello")
	assert.NotContains(t, p.Spec.Process.Args, "--egress-ports", "not on a server's command line")
	m := planMount(p.Spec, resolvConf)
	require.NotNil(t, m)
	assert.Equal(t, "/state/rootfs"+initproto.ResolvConfPath, m.Source)
	assert.Contains(t, m.Options, "ro")
	assert.NotContains(t, p.Inline, resolvConf, "not the host's to copy")
	assert.Contains(t, p.Files, File{Path: initproto.ResolvConfPath, Content: []byte(resolvConfContent)})
	assert.Contains(t, resolvConfContent, "\nnameserver 127.0.0.1\n")

	// No host resolv.conf: a mount point is made for it.
	cfg.Host = planHost
	p, err = Build(cfg)
	require.NoError(t, err)
	require.NotNil(t, planMount(p.Spec, resolvConf))
	assert.Contains(t, p.Root, RootEntry{Path: resolvConf})

	// --try: bound over the host's, when it has one.
	cfg.Sandbox.HostSystem, cfg.Host = true, withResolv
	cfg.Host.Whole = []HostPath{{Path: "/etc", Dir: true}}
	p, err = Build(cfg)
	require.NoError(t, err)
	require.NotNil(t, planMount(p.Spec, resolvConf))
	assert.Equal(t, resolvConf, p.Spec.Mounts[len(p.Spec.Mounts)-1].Destination, "after the whole /etc")
	cfg.Host.Etc = planHost.Etc
	p, err = Build(cfg)
	require.NoError(t, err)
	assert.Nil(t, planMount(p.Spec, resolvConf), "no mount point in the host's /etc")

	// A printed spec: the host's file.
	cfg = planConfig(ModeExec, TargetPrint)
	cfg.Policy, cfg.Sandbox.NewNetNS, cfg.Host = allowlist, true, withResolv
	p, err = Build(cfg)
	require.NoError(t, err)
	assert.Equal(t, resolvConf, planMount(p.Spec, resolvConf).Source)
	assert.Empty(t, p.Files)

	// disabled: the host's file, no capture.
	cfg = planConfig(ModeServe, TargetStart)
	cfg.Policy.NetworkMode, cfg.Sandbox.NewNetNS, cfg.Host = set(policy.NetworkDisabled), true, withResolv
	p, err = Build(cfg)
	require.NoError(t, err)
	assert.Equal(t, resolvConf, planMount(p.Spec, resolvConf).Source)
	assert.Empty(t, p.Setup.EgressPorts)
}
