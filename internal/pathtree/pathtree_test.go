package pathtree

import (
	"path"
	"strings"
	"testing"
)

func TestWithinAndBelow(t *testing.T) {
	for _, tc := range []struct {
		path, root    string
		within, below bool
	}{
		{"/", "/", true, false},
		{"/a", "/", true, true},
		{"/a/b", "/", true, true},
		{"/a", "/a", true, false},
		{"/a/b", "/a", true, true},
		{"/a/b/c", "/a", true, true},
		{"/ab", "/a", false, false},
		{"/a", "/ab", false, false},
		{"/a", "/a/b", false, false},
		{"/", "/a", false, false},
		{"/b", "/a", false, false},
		// Trailing slashes are ignored.
		{"/a/", "/a", true, false},
		{"/a", "/a/", true, false},
		{"/a/", "/a/", true, false},
		{"/a/b/", "/a", true, true},
		{"/a/b", "/a/", true, true},
		{"/ab", "/a/", false, false},
		// ".." is text: clean first.
		{"/a/../b", "/a", true, true},
		{"/a/..", "/a", true, true},
		{"/b", "/a/..", false, false},
		// Relative paths, among themselves.
		{"a", "a", true, false},
		{"a/b", "a", true, true},
		{"ab", "a", false, false},
		{"a", "a/b", false, false},
		{"../a", "..", true, true},
		// An absolute path is not beneath a relative one, nor the other
		// way round.
		{"a", "/", false, false},
		{"a/b", "/a", false, false},
		{"/a/b", "a", false, false},
		{"", "/", false, false},
		// The empty root is "/" without its slash.
		{"", "", true, false},
		{"/", "", true, false},
		{"/a", "", true, true},
		{"a", "", false, false},
	} {
		if got := Within(tc.path, tc.root); got != tc.within {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.path, tc.root, got, tc.within)
		}
		if got := Below(tc.path, tc.root); got != tc.below {
			t.Errorf("Below(%q, %q) = %v, want %v", tc.path, tc.root, got, tc.below)
		}
	}
}

// TestCleanPaths checks Within, Below and Depth on every pair of a set of
// clean absolute paths against their plain definitions.
func TestCleanPaths(t *testing.T) {
	paths := []string{"/", "/a", "/ab", "/a/b", "/a/bc", "/a/b/c", "/b", "/b/a"}
	for _, p := range paths {
		if path.Clean(p) != p {
			t.Fatalf("%q is not clean", p)
		}
		if got, want := Depth(p), len(strings.FieldsFunc(p, func(r rune) bool { return r == '/' })); got != want {
			t.Errorf("Depth(%q) = %d, want %d", p, got, want)
		}
		for _, r := range paths {
			within := p == r || r == "/" || strings.HasPrefix(p, r+"/")
			if got := Within(p, r); got != within {
				t.Errorf("Within(%q, %q) = %v, want %v", p, r, got, within)
			}
			if got := Below(p, r); got != (within && p != r) {
				t.Errorf("Below(%q, %q) = %v, want %v", p, r, got, within && p != r)
			}
		}
	}
}

func TestDepth(t *testing.T) {
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/", 0},
		{"/a", 1},
		{"/a/", 1},
		{"/a/b", 2},
		{"/a/b/c", 3},
		{"/a/..", 2}, // text, not cleaned
		{"", 0},
		{".", 0},
		{"a", 1},
		{"a/b", 2},
		{"a/b/", 2},
	} {
		if got := Depth(tc.path); got != tc.want {
			t.Errorf("Depth(%q) = %d, want %d", tc.path, got, tc.want)
		}
	}
}
