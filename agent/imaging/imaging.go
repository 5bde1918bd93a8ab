// Package imaging fits images into the size limits of an MCP image block.
package imaging

import "errors"

// Limits bound an image handed to a client.
type Limits struct {
	MaxWidth, MaxHeight int
	// MaxBytes bounds the base64-encoded size.
	MaxBytes int
}

// DefaultLimits are those of boxsh v3: 2000×2000 and 4.5 MB.
var DefaultLimits = Limits{MaxWidth: 2000, MaxHeight: 2000, MaxBytes: 4718592}

// Image is an image ready for an MCP image block.
type Image struct {
	// Data is the base64-encoded image.
	Data string
	// MIME is the MIME type of Data (it may differ from the input's).
	MIME                          string
	Width, Height                 int
	OriginalWidth, OriginalHeight int
	Resized                       bool
}

// ErrUnsupported is returned for formats that cannot be decoded.
var ErrUnsupported = errors.New("unsupported image format")

// Fit decodes raw (of type mime) and returns it within lim.
func Fit(raw []byte, mime string, lim Limits) (Image, error) {
	return Image{}, ErrUnsupported
}
