// Package filetype tells binary files from text by their content and names
// their MIME type.
package filetype

// Type is what Detect found.
type Type struct {
	// MIME is the detected MIME type, e.g. "image/png" or "text/plain".
	MIME string
	// Binary reports whether the content is not text.
	Binary bool
}

// Detect inspects the first bytes of a file (head, up to a few KiB) whose
// full size is size.
func Detect(head []byte, size int64) Type {
	return Type{MIME: "text/plain"}
}
