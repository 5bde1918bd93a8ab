package imaging

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestFixtures runs Fit over the image fixtures of boxsh v3 found in
// $BOXSH_FIXTURES: the formats Fit decodes must fit, the others must be
// reported as unsupported.
func TestFixtures(t *testing.T) {
	dir := os.Getenv("BOXSH_FIXTURES")
	if dir == "" {
		t.Skip("set BOXSH_FIXTURES to run the v3 fixture comparison")
	}
	tests := []struct {
		file, mime string
		ok         bool
	}{
		{"fixture.png", "image/png", true},
		{"fixture-itxt.png", "image/png", true},
		{"fixture.apng", "image/png", true},
		{"fixture.jpg", "image/jpeg", true},
		{"fixture.gif", "image/gif", true},
		{"fixture.webp", "image/webp", true},
		{"fixture.bmp", "image/bmp", true},
		{"fixture-little-endian.tif", "image/tiff", true},
		{"fixture-big-endian.tif", "image/tiff", true},
		{"fixture.ico", "image/x-icon", false},
		{"fixture.psd", "image/vnd.adobe.photoshop", false},
		{"fixture.jxl", "image/jxl", false},
		{"fixture-yuv420-8bit.avif", "image/avif", false},
		{"fixture-corrupt.png", "image/png", false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, tt.file))
			if errors.Is(err, os.ErrNotExist) {
				t.Skip("fixture missing")
			}
			if err != nil {
				t.Fatal(err)
			}
			img, err := Fit(raw, tt.mime, DefaultLimits)
			switch {
			case tt.ok && err != nil:
				t.Errorf("Fit: %v", err)
			case tt.ok:
				t.Logf("%s: %dx%d %s resized=%v", tt.file, img.Width, img.Height, img.MIME, img.Resized)
			case !errors.Is(err, ErrUnsupported):
				t.Errorf("Fit = %+v, %v; want ErrUnsupported", brief(img), err)
			}
		})
	}
}
