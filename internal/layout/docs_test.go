package layout

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sides are the values of the package map's side column: "both" is the
// front and boxsh-init, "front, launcher" the front and boxsh-launch.
var sides = []string{"library", "front", "both", "init", "launcher", "front, launcher", "tests"}

// packageMap reads the package map of docs/architecture.md: package →
// side, from the rows of its table whose first cell names packages.
func packageMap(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/architecture.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(b), "| package | side | what it does |")
	require.True(t, ok, "docs/architecture.md has the package map")
	table, _, _ = strings.Cut(table, "\n\n")
	name := regexp.MustCompile("`([^`]+)`")
	m := map[string]string{}
	for _, row := range strings.Split(table, "\n")[2:] {
		cells := strings.Split(row, " | ")
		require.GreaterOrEqual(t, len(cells), 3, "row %q", row)
		side := strings.TrimSpace(cells[1])
		assert.Contains(t, sides, side, "row %q", row)
		for _, sm := range name.FindAllStringSubmatch(cells[0], -1) {
			m[sm[1]] = side
		}
	}
	return m
}

// TestArchitectureMap checks that docs/architecture.md's package map names
// every package of the module, and no package that is gone.
func TestArchitectureMap(t *testing.T) {
	out, err := exec.Command("go", "list", module+"...").Output()
	require.NoError(t, err)
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		pkgs = append(pkgs, strings.TrimPrefix(p, module))
	}
	documented := packageMap(t)
	for _, p := range pkgs {
		assert.Contains(t, documented, p, "docs/architecture.md's package map has no row for %s", p)
	}
	for p := range documented {
		assert.True(t, slices.Contains(pkgs, p), "docs/architecture.md's package map names %s, which is not a package", p)
	}
}

// TestArchitectureMapSides checks the side the map gives the packages whose
// side the layout shows: internal/front is the front's, internal/toolhost
// boxsh-init's, and only client's tree is a library.
func TestArchitectureMapSides(t *testing.T) {
	for p, side := range packageMap(t) {
		switch {
		case match("internal/front/...", p):
			assert.Equal(t, "front", side, p)
		case match("internal/toolhost/...", p):
			assert.Equal(t, "init", side, p)
		case match("client/...", p):
			assert.Equal(t, "library", side, p)
		case side == "library":
			t.Errorf("%s is marked library but is not under client/", p)
		}
	}
}
