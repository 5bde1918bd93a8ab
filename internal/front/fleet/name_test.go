package fleet

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidName checks validName against the regexp it stands for.
func TestValidName(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)
	names := []string{"", "a", "Z9", "0", "-a", "_a", "a-", "a_b-c", "a b", "a.b", "a\n", "é", "aé",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "a" + strings.Repeat("-", 62), "a/b", "a\x00"}
	for _, n := range names {
		if got, want := validName(n), re.MatchString(n); got != want {
			t.Errorf("validName(%q) = %v, want %v", n, got, want)
		}
	}
}
