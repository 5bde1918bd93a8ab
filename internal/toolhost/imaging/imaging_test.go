package imaging

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
)

// Tiny WebP images (1×1), lossless and lossy, as published by Modernizr's
// feature detection.
const (
	webpLossless = "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="
	webpLossy    = "UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA"
)

// gradient returns a w×h image with smooth gradients.
func gradient(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		row := img.Pix[y*img.Stride:]
		for x := 0; x < w; x++ {
			copy(row[4*x:], []byte{uint8(x * 255 / w), uint8(y * 255 / h), uint8(x + y), 255})
		}
	}
	return img
}

// noisy returns a w×h image of a gradient with pseudo-random noise, which
// compresses poorly.
func noisy(w, h int) *image.RGBA {
	img := gradient(w, h)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		if i%4 != 3 {
			img.Pix[i] += uint8(r.IntN(64))
		}
	}
	return img
}

// encodePNG encodes img as PNG.
func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatalf("encode png: %v", err)
	}
	return buf.Bytes()
}

// encodeJPEG encodes img as JPEG.
func encodeJPEG(t testing.TB, img image.Image, quality int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatalf("encode jpeg: %v", err)
	}
	return buf.Bytes()
}

// mustBase64 decodes a base64 literal.
func mustBase64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("decode base64: %v", err)
	}
	return b
}

// decodeData decodes the image in img.Data and checks its size and format.
func decodeData(t *testing.T, img Image) image.Image {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(img.Data)
	if err != nil {
		t.Fatalf("Data is not base64: %v", err)
	}
	m, name, err := image.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("Data does not decode: %v", err)
	}
	if "image/"+name != img.MIME {
		t.Errorf("Data is %s, MIME says %s", name, img.MIME)
	}
	if b := m.Bounds(); b.Dx() != img.Width || b.Dy() != img.Height {
		t.Errorf("Data is %dx%d, Image says %dx%d", b.Dx(), b.Dy(), img.Width, img.Height)
	}
	return m
}

func TestFitPassThrough(t *testing.T) {
	small := gradient(100, 50)
	pal := image.NewPaletted(image.Rect(0, 0, 100, 50), color.Palette{color.Black, color.White})
	encode := func(enc func(*bytes.Buffer) error) []byte {
		var buf bytes.Buffer
		if err := enc(&buf); err != nil {
			t.Fatalf("encode: %v", err)
		}
		return buf.Bytes()
	}
	tests := []struct {
		name string
		raw  []byte
		mime string
		w, h int
	}{
		{"png", encodePNG(t, small), "image/png", 100, 50},
		{"jpeg", encodeJPEG(t, small, 90), "image/jpeg", 100, 50},
		{"gif", encode(func(b *bytes.Buffer) error { return gif.Encode(b, pal, nil) }), "image/gif", 100, 50},
		{"bmp", encode(func(b *bytes.Buffer) error { return bmp.Encode(b, small) }), "image/bmp", 100, 50},
		{"tiff", encode(func(b *bytes.Buffer) error { return tiff.Encode(b, small, nil) }), "image/tiff", 100, 50},
		{"webp lossless", mustBase64(t, webpLossless), "image/webp", 1, 1},
		{"webp lossy", mustBase64(t, webpLossy), "image/webp", 1, 1},
		{"exact limits", encodePNG(t, gradient(2000, 2000)), "image/png", 2000, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mime := range []string{tt.mime, ""} {
				got, err := Fit(tt.raw, mime, DefaultLimits)
				if err != nil {
					t.Fatalf("Fit(%q): %v", mime, err)
				}
				want := Image{
					Data:  base64.StdEncoding.EncodeToString(tt.raw),
					MIME:  tt.mime,
					Width: tt.w, Height: tt.h,
					OriginalWidth: tt.w, OriginalHeight: tt.h,
				}
				if got != want {
					t.Errorf("Fit(%q) = %+v, want the input unchanged (%+v)", mime, brief(got), brief(want))
				}
			}
		})
	}
}

// brief drops the data of img for error messages.
func brief(img Image) Image {
	img.Data = "…"
	return img
}

func TestFitResize(t *testing.T) {
	tests := []struct {
		name         string
		w, h         int
		lim          Limits
		wantW, wantH int
	}{
		{"wide", 3000, 1000, DefaultLimits, 2000, 667},
		{"tall", 1000, 3000, DefaultLimits, 667, 2000},
		{"both", 4000, 3000, DefaultLimits, 2000, 1500},
		{"both, height bound", 3000, 4000, DefaultLimits, 1500, 2000},
		{"custom", 800, 600, Limits{MaxWidth: 400, MaxHeight: 400, MaxBytes: 1 << 20}, 400, 300},
		{"thin", 5000, 1, Limits{MaxWidth: 100, MaxHeight: 100, MaxBytes: 1 << 20}, 100, 1},
		{"zero limits mean default", 3000, 1000, Limits{}, 2000, 667},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw := encodeJPEG(t, gradient(tt.w, tt.h), 90)
			got, err := Fit(raw, "image/jpeg", tt.lim)
			if err != nil {
				t.Fatalf("Fit: %v", err)
			}
			if got.Width != tt.wantW || got.Height != tt.wantH || !got.Resized ||
				got.OriginalWidth != tt.w || got.OriginalHeight != tt.h {
				t.Errorf("Fit = %+v, want %dx%d resized from %dx%d", brief(got), tt.wantW, tt.wantH, tt.w, tt.h)
			}
			decodeData(t, got)
		})
	}
}

// TestFitBytes checks that images over the byte budget are re-encoded, at
// a lower quality and then at smaller dimensions.
func TestFitBytes(t *testing.T) {
	raw := encodePNG(t, noisy(1200, 900))
	full := base64.StdEncoding.EncodedLen(len(raw))
	tests := []struct {
		name      string
		maxBytes  int
		shrinks   bool // the dimensions must shrink
		wantWidth int  // if not shrinking
	}{
		{"within dimensions, over budget", full - 1, false, 1200},
		{"tight budget", 40_000, true, 0},
		{"very tight budget", 4_000, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Fit(raw, "image/png", Limits{MaxWidth: 2000, MaxHeight: 2000, MaxBytes: tt.maxBytes})
			if err != nil {
				t.Fatalf("Fit: %v", err)
			}
			if len(got.Data) > tt.maxBytes {
				t.Errorf("Fit returned %d bytes of base64, want at most %d", len(got.Data), tt.maxBytes)
			}
			if !got.Resized || got.OriginalWidth != 1200 || got.OriginalHeight != 900 {
				t.Errorf("Fit = %+v, want a resized 1200x900 image", brief(got))
			}
			if tt.shrinks && got.Width >= 1200 {
				t.Errorf("Fit = %+v, want smaller dimensions", brief(got))
			}
			if !tt.shrinks && got.Width != tt.wantWidth {
				t.Errorf("Fit = %+v, want width %d", brief(got), tt.wantWidth)
			}
			if ratio := float64(got.Width) / float64(got.Height); math.Abs(ratio-4.0/3) > 0.02 {
				t.Errorf("Fit = %+v: aspect ratio %.3f, want 4:3", brief(got), ratio)
			}
			decodeData(t, got)
		})
	}
}

// TestFitQuality checks that a budget the best JPEG quality misses but a
// lower one meets keeps the dimensions.
func TestFitQuality(t *testing.T) {
	img := noisy(600, 400)
	b64 := func(b []byte) int { return base64.StdEncoding.EncodedLen(len(b)) }
	q80, q40 := b64(encodeJPEG(t, img, 80)), b64(encodeJPEG(t, img, 40))
	if q40 >= q80 {
		t.Fatalf("JPEG at quality 40 (%d) is not smaller than at 80 (%d)", q40, q80)
	}
	got, err := Fit(encodePNG(t, img), "image/png", Limits{MaxWidth: 2000, MaxHeight: 2000, MaxBytes: q40})
	if err != nil {
		t.Fatalf("Fit: %v", err)
	}
	if got.Width != 600 || got.Height != 400 || got.MIME != "image/jpeg" || len(got.Data) > q40 {
		t.Errorf("Fit = %+v (%d bytes), want a 600x400 JPEG of at most %d bytes", brief(got), len(got.Data), q40)
	}
	if len(got.Data) <= b64(encodeJPEG(t, img, 20)) {
		t.Errorf("Fit returned %d bytes, no more than the lowest quality: want quality 40", len(got.Data))
	}
	decodeData(t, got)
}

func TestFitImpossible(t *testing.T) {
	raw := encodePNG(t, noisy(300, 200))
	_, err := Fit(raw, "image/png", Limits{MaxWidth: 2000, MaxHeight: 2000, MaxBytes: 10})
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("Fit with a 10-byte budget: err = %v, want ErrTooLarge", err)
	}
}

// TestFitTransparentJPEG checks that transparency becomes white, not black,
// when an image is re-encoded as JPEG.
func TestFitTransparentJPEG(t *testing.T) {
	img := noisy(400, 400)
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i-3], img.Pix[i-2], img.Pix[i-1], img.Pix[i] = 0, 0, 0, 0
	}
	// Keep a noisy opaque band so that JPEG beats PNG.
	for y := 0; y < 200; y++ {
		for x := 0; x < 400; x++ {
			c := img.RGBAAt(x, y)
			c.R, c.G, c.B, c.A = uint8(x*y), uint8(x^y), uint8(x+y*7), 255
			img.SetRGBA(x, y, c)
		}
	}
	got, err := Fit(encodePNG(t, img), "image/png", Limits{MaxWidth: 200, MaxHeight: 200, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatalf("Fit: %v", err)
	}
	if got.MIME != "image/jpeg" {
		t.Skipf("Fit chose %s; the test needs JPEG", got.MIME)
	}
	m := decodeData(t, got)
	r, g, b, _ := m.At(got.Width/2, got.Height-5).RGBA()
	if r < 0xf000 || g < 0xf000 || b < 0xf000 {
		t.Errorf("transparent area is %x,%x,%x, want white", r>>8, g>>8, b>>8)
	}
}

// pngHeader returns a PNG signature and a valid IHDR chunk for a w×h RGBA
// image, with no image data.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(ihdr)))
	chunk = append(chunk, "IHDR"...)
	chunk = append(chunk, ihdr...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	return append([]byte("\x89PNG\r\n\x1a\n"), chunk...)
}

func TestFitErrors(t *testing.T) {
	valid := encodePNG(t, gradient(64, 64))
	tests := []struct {
		name string
		raw  []byte
		mime string
		want error
	}{
		{"empty", nil, "image/png", ErrUnsupported},
		{"garbage", []byte("this is not an image at all"), "image/png", ErrUnsupported},
		{"truncated PNG header", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), "image/png", ErrUnsupported},
		{"PNG without data", pngHeader(10, 10), "image/png", ErrUnsupported},
		{"truncated PNG", valid[:len(valid)/2], "image/png", ErrUnsupported},
		{"GIF header only", append([]byte("GIF89a"), make([]byte, 58)...), "image/gif", ErrUnsupported},
		{"ICO", append([]byte("\x00\x00\x01\x00\x01\x00"), make([]byte, 32)...), "image/x-icon", ErrUnsupported},
		{"huge dimensions", pngHeader(100000, 100000), "image/png", ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Fit(tt.raw, tt.mime, DefaultLimits)
			if !errors.Is(err, tt.want) {
				t.Errorf("Fit = %+v, %v; want error %v", brief(got), err, tt.want)
			}
		})
	}
}

func TestFitDims(t *testing.T) {
	tests := []struct{ w, h, maxW, maxH, wantW, wantH int }{
		{3000, 1000, 2000, 2000, 2000, 667},
		{1000, 3000, 2000, 2000, 667, 2000},
		{2000, 2000, 2000, 2000, 2000, 2000},
		{10, 10, 2000, 2000, 10, 10},
		{100000, 1, 2000, 2000, 2000, 1},
		{1, 100000, 2000, 2000, 1, 2000},
	}
	for _, tt := range tests {
		if w, h := fitDims(tt.w, tt.h, tt.maxW, tt.maxH); w != tt.wantW || h != tt.wantH {
			t.Errorf("fitDims(%d, %d, %d, %d) = %d, %d; want %d, %d", tt.w, tt.h, tt.maxW, tt.maxH, w, h, tt.wantW, tt.wantH)
		}
	}
}

func BenchmarkFit(b *testing.B) {
	raw := encodeJPEG(b, noisy(4000, 3000), 85)
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for b.Loop() {
		img, err := Fit(raw, "image/jpeg", DefaultLimits)
		if err != nil {
			b.Fatal(err)
		}
		if !img.Resized {
			b.Fatal("not resized")
		}
	}
}
