// Package pathtree judges where slash-separated paths lie in the directory
// tree, by their text alone.
//
// It tells whether one path is another or beneath it, and how deep a path is.
//
// Its functions are meant for clean paths, as path.Clean and filepath.Clean
// make them on Unix, both absolute or both relative. They clean nothing and
// follow no symbolic links, so a path with ".." elements is judged by its text
// ("/a/../b" is beneath "/a"). So:
//
//   - clean paths that come from outside first;
//   - where a symbolic link on the way matters, judge what the kernel
//     resolves, not the text: descriptors opened beneath one another, or
//     openat2 with RESOLVE_BENEATH, as runtime/host and client/session do.
//
// A trailing slash on either path is ignored, so that the empty root is "/"
// (see Within). An absolute path is never beneath a relative one, nor a
// relative one beneath an absolute one.
package pathtree

import "strings"

// Within reports whether path is root or beneath it: "/a" holds "/a" and
// "/a/b" but not "/ab", and the root "/" holds every absolute path. So
// does the empty root, which is "/" with its trailing slash dropped (and
// holds the empty path too).
func Within(path, root string) bool {
	_, ok := rest(path, root)
	return ok
}

// Below reports whether path is strictly beneath root: Within it, and not
// root itself.
func Below(path, root string) bool {
	r, ok := rest(path, root)
	return ok && r != ""
}

// rest is what path has beneath root, without the slashes around it ("" for
// root itself), and whether path is root or beneath it.
func rest(path, root string) (string, bool) {
	r := strings.TrimSuffix(root, "/")
	after, ok := strings.CutPrefix(path, r)
	switch {
	case !ok:
		return "", false
	case after == "":
		// path is root without its trailing slash; for the root "/",
		// path is "" and not absolute.
		return "", root != "/"
	case after[0] != '/':
		return "", false // "/ab" is not beneath "/a", nor "a" beneath "/"
	}
	return strings.Trim(after, "/"), true
}

// Depth is the number of elements of path: 0 for "/" (and for "." and
// ""), 1 for "/a" or "a", 2 for "/a/b" or "a/b".
func Depth(path string) int {
	path = strings.TrimSuffix(path, "/")
	if path == "" || path == "." {
		return 0
	}
	n := strings.Count(path, "/")
	if path[0] != '/' {
		n++
	}
	return n
}
