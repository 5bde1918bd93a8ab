package hostcheck

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/frame"
)

func TestInitMountPathIsFrames(t *testing.T) {
	assert.Equal(t, frame.InitMountPath, initMountPath)
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
	out, err := exec.Command("sh", "../../scripts/apparmor-profile.sh", "/opt/boxsh/bin/boxsh").Output()
	require.NoError(t, err)
	p := string(out)
	assert.Contains(t, p, "abi <abi/4.0>,\n")
	assert.Contains(t, p, "include <tunables/global>\n")
	assert.Contains(t, p, "\nprofile boxsh /opt/boxsh/bin/boxsh flags=(unconfined) {\n  userns,\n")
	assert.True(t, strings.HasSuffix(p, "}\n"))
	assert.Equal(t, "/etc/apparmor.d/boxsh", AppArmorProfilePath)
	install, err := os.ReadFile("../../install.sh")
	require.NoError(t, err)
	assert.Contains(t, string(install), "> "+AppArmorProfilePath+"\n")
	assert.Contains(t, string(install), "apparmor_parser -r "+AppArmorProfilePath)

	// A relative path would attach to nothing.
	err = exec.Command("sh", "../../scripts/apparmor-profile.sh", "bin/boxsh").Run()
	assert.Error(t, err)
}
