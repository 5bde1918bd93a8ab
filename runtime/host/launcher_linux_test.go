package host

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/launch"
)

// TestLauncherConfigRoundTrip checks that libcontainer's configuration of a
// planned sandbox reaches the launcher whole: what the front encodes, the
// launcher decodes to the same configuration.
func TestLauncherConfigRoundTrip(t *testing.T) {
	b, err := os.ReadFile("../plan/testdata/spec.golden.json")
	require.NoError(t, err)
	var spec specs.Spec
	require.NoError(t, json.Unmarshal(b, &spec))
	for _, cgroups := range []bool{true, false} {
		config, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
			CgroupName:      "sb-test",
			Spec:            &spec,
			RootlessEUID:    true,
			RootlessCgroups: cgroups,
		})
		require.NoError(t, err)
		config.ParentDeathSignal = 9
		config.Cgroups.Resources.Devices = nil
		enc, err := json.Marshal(config)
		require.NoError(t, err)
		got, err := launch.DecodeConfig(enc)
		require.NoError(t, err)
		// No hooks, empty or nil, are the same to libcontainer.
		require.Empty(t, config.Hooks)
		config.Hooks = nil
		require.Equal(t, config, got)
	}
}
