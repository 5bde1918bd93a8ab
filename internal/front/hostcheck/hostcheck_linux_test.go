package hostcheck

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
)

func TestInitMountPathIsFrames(t *testing.T) {
	assert.Equal(t, initproto.InitMountPath, initMountPath)
}

// On the test host every needed check passes (the sandbox tests need it).
func TestAllPassHere(t *testing.T) {
	assert.Equal(t, "", Problem(All()))
	assert.Equal(t, "", Diagnose(errors.New("some failure")))
}

func TestInitialUserNS(t *testing.T) {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		t.Skip("no user namespaces")
	}
	assert.Equal(t, strings.Fields(string(b))[2] == "4294967295", InitialUserNS())
	if InitialUserNS() {
		assert.Equal(t, os.Getuid(), OuterUID())
	}
}

func TestDiagnoseProcMount(t *testing.T) {
	d := Diagnose(errors.New(`error mounting "proc" to rootfs at "/proc": mount proc:/proc (via /proc/self/fd/7), flags: 0xe: operation not permitted`))
	assert.Contains(t, d, "systempaths=unconfined")
	assert.Contains(t, d, "procMount: Unmasked")
}

// Under Docker's default seccomp profile with --cap-add SYS_ADMIN, the
// user namespace is made but keyctl is refused: the seccomp profile is
// named, with Docker's flag.
func TestDiagnoseSeccomp(t *testing.T) {
	const keyring = "unable to start container process: error during container init: unable to join session keyring: unable to create session key: operation not permitted"
	d := diagnoseSeccomp(keyring, true)
	assert.True(t, strings.HasPrefix(d, "seccomp: a seccomp filter (a container's profile) refuses a call the sandbox's start needs (unable to start"), d)
	assert.Contains(t, d, "--security-opt seccomp=unconfined")
	assert.Contains(t, d, "seccompProfile.type: Unconfined")
	assert.Equal(t, "", diagnoseSeccomp(keyring, false), "no filter, no blame")
	assert.Equal(t, "", diagnoseSeccomp("no such file or directory", true))
}

func TestCgroupMode(t *testing.T) {
	mode := CgroupMode()
	assert.Contains(t, []string{"v1", "v2", "none"}, mode)
	c := Cgroups()
	assert.True(t, c.OK || mode == "none", c.Line())
	assert.Contains(t, c.Detail, mode)
}

// The profile install.sh installs where AppArmor restricts user
// namespaces: unconfined for the installed boxsh, with userns allowed,
// under the ABI that knows the rule.
func TestAppArmorProfile(t *testing.T) {
	out, err := exec.Command("sh", "../../../scripts/apparmor-profile.sh", "/opt/boxsh/bin/boxsh").Output()
	require.NoError(t, err)
	p := string(out)
	assert.Contains(t, p, "abi <abi/4.0>,\n")
	assert.Contains(t, p, "include <tunables/global>\n")
	assert.Contains(t, p, "\nprofile boxsh /opt/boxsh/bin/boxsh flags=(unconfined) {\n  userns,\n")
	assert.True(t, strings.HasSuffix(p, "}\n"))
	assert.Equal(t, "/etc/apparmor.d/boxsh", AppArmorProfilePath)
	install, err := os.ReadFile("../../../install.sh")
	require.NoError(t, err)
	assert.Contains(t, string(install), "> "+AppArmorProfilePath+"\n")
	assert.Contains(t, string(install), "apparmor_parser -r "+AppArmorProfilePath)

	// A relative path would attach to nothing.
	err = exec.Command("sh", "../../../scripts/apparmor-profile.sh", "bin/boxsh").Run()
	assert.Error(t, err)
}

// In a Docker or Podman container whose failures are all settings of the
// engine, the summary starts with the run flags that fix every one.
func TestEngineFlags(t *testing.T) {
	proc := Check{Name: "/proc", Needed: true, Detail: "masked", Fix: procFix}
	calls := Check{Name: "start calls", Needed: true, Detail: "refused: sethostname", Fix: seccompCallsFix}
	userns := Check{Name: "user namespaces", Needed: true, Detail: "refused by a filter", Fix: seccompFix}
	assert.Equal(t, "--security-opt unmask=ALL --security-opt seccomp=unconfined (Podman)", engineFlags("podman", []Check{proc, calls}))
	assert.Equal(t, "--security-opt seccomp=unconfined --security-opt systempaths=unconfined (Docker)", engineFlags("docker", []Check{userns, calls, proc}),
		"one flag for two checks of the same setting")
	assert.Equal(t, "", engineFlags("", []Check{proc}), "no engine, no flags")
	assert.Equal(t, "", engineFlags("podman", []Check{proc, {Name: "AppArmor", Needed: true, Fix: "install the profile"}}),
		"a cause that is no setting of the engine's")
	assert.Equal(t, "", engineFlags("podman", nil))
}

// The probe of the start's calls finds them allowed on this host, which
// runs no filter: it runs the test binary again as its program.
func TestStartCallsProbe(t *testing.T) {
	if probeUserNS() != nil {
		t.Skip("no user namespaces here: the probe needs one")
	}
	ProbeBinary = "/proc/self/exe"
	defer func() { ProbeBinary = "" }()
	c := StartCalls()
	assert.True(t, c.OK, c.Line())
	assert.True(t, c.Needed)
	assert.Contains(t, c.Detail, "may call sethostname, keyctl, mount, pivot_root and umount")
}

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == ProbeArg {
		RunProbe()
	}
	os.Exit(m.Run())
}
