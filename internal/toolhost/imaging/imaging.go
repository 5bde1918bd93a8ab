// Package imaging fits images into the size limits of an MCP image block.
//
// Fit follows boxsh v3. An image already within the limits is handed over
// unchanged. A larger one is scaled down to fit, keeping its aspect ratio, and
// re-encoded as PNG or JPEG, whichever is smaller. Fit lowers the JPEG
// quality, and then the dimensions, until the encoded image fits the byte
// budget.
package imaging

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/bmp"
	"golang.org/x/image/draw"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

// Limits bound an image handed to a client. A zero field takes its value
// from DefaultLimits.
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

// ErrTooLarge is returned for images that cannot be brought within the
// limits, or that have too many pixels to be decoded safely.
var ErrTooLarge = errors.New("image too large")

// maxPixels bounds the pixel count of an image Fit decodes (about 256 MB of
// RGBA), to keep a small file declaring huge dimensions from exhausting
// memory.
const maxPixels = 64 << 20

// jpegQualities are the JPEG qualities tried, best first, at each size.
var jpegQualities = [...]int{80, 60, 40, 20}

// maxAttempts bounds the number of sizes tried, each half the previous one.
const maxAttempts = 8

// A format is an image format Fit can decode.
type format struct {
	mime   string
	magics []string // leading bytes; '?' matches any byte
	decode func(io.Reader) (image.Image, error)
	config func(io.Reader) (image.Config, error)
}

// formats are the decodable formats, selected by their leading bytes rather
// than through the image package's global registry.
var formats = []format{
	{"image/png", []string{"\x89PNG\r\n\x1a\n"}, png.Decode, png.DecodeConfig},
	{"image/jpeg", []string{"\xff\xd8"}, jpeg.Decode, jpeg.DecodeConfig},
	{"image/gif", []string{"GIF87a", "GIF89a"}, gif.Decode, gif.DecodeConfig},
	{"image/bmp", []string{"BM????\x00\x00\x00\x00"}, bmp.Decode, bmp.DecodeConfig},
	{"image/webp", []string{"RIFF????WEBPVP8"}, webp.Decode, webp.DecodeConfig},
	{"image/tiff", []string{"II\x2a\x00", "MM\x00\x2a"}, tiff.Decode, tiff.DecodeConfig},
}

// sniff returns the format raw is in, or nil.
func sniff(raw []byte) *format {
	for i := range formats {
		for _, magic := range formats[i].magics {
			if matchMagic(raw, magic) {
				return &formats[i]
			}
		}
	}
	return nil
}

// matchMagic reports whether raw starts with magic, '?' matching any byte.
func matchMagic(raw []byte, magic string) bool {
	if len(raw) < len(magic) {
		return false
	}
	for i := 0; i < len(magic); i++ {
		if magic[i] != '?' && raw[i] != magic[i] {
			return false
		}
	}
	return true
}

// Fit decodes raw, of type mime, and returns it within lim.
//
// An image whose dimensions and base64 size are within lim is returned as is,
// with its own MIME type: mime, or the detected type if mime is empty.
// Otherwise, as boxsh v3 does:
//
//   - it is scaled down to fit MaxWidth×MaxHeight, keeping its aspect ratio;
//   - it is encoded both as PNG and as JPEG at quality 80, keeping the
//     smaller;
//   - if neither fits MaxBytes, JPEG qualities 60, 40 and 20 are tried;
//   - then the dimensions are halved, up to eight times.
//
// A JPEG has its transparent areas composited over white.
//
// Fit decodes PNG, JPEG, GIF (first frame), BMP, WebP and TIFF, whatever mime
// says. Anything else, or undecodable data, yields an error wrapping
// ErrUnsupported. An error wrapping ErrTooLarge means the image cannot be
// fitted, or has too many pixels to be decoded safely.
func Fit(raw []byte, mime string, lim Limits) (Image, error) {
	lim = lim.withDefaults()
	f := sniff(raw)
	if f == nil {
		return Image{}, fmt.Errorf("imaging: decode %s: %w", describe(mime), ErrUnsupported)
	}
	if mime == "" {
		mime = f.mime
	}
	cfg, err := f.config(bytes.NewReader(raw))
	if err != nil {
		return Image{}, fmt.Errorf("imaging: decode %s header: %w (%w)", f.mime, ErrUnsupported, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return Image{}, fmt.Errorf("imaging: decode %s: empty %dx%d image: %w", f.mime, cfg.Width, cfg.Height, ErrUnsupported)
	}
	if int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return Image{}, fmt.Errorf("imaging: decode %s: %dx%d exceeds %d pixels: %w", f.mime, cfg.Width, cfg.Height, maxPixels, ErrTooLarge)
	}
	// Decode fully even when the image is passed through, so that a corrupt
	// file is reported rather than handed to the client.
	src, err := f.decode(bytes.NewReader(raw))
	if err != nil {
		return Image{}, fmt.Errorf("imaging: decode %s: %w (%w)", f.mime, ErrUnsupported, err)
	}
	w, h := src.Bounds().Dx(), src.Bounds().Dy()

	if w <= lim.MaxWidth && h <= lim.MaxHeight && base64.StdEncoding.EncodedLen(len(raw)) <= lim.MaxBytes {
		return Image{
			Data:  base64.StdEncoding.EncodeToString(raw),
			MIME:  mime,
			Width: w, Height: h,
			OriginalWidth: w, OriginalHeight: h,
		}, nil
	}

	rgba := toRGBA(src)
	tw, th := fitDims(w, h, lim.MaxWidth, lim.MaxHeight)
	for attempt := 0; attempt < maxAttempts && tw > 0 && th > 0; attempt++ {
		data, outMIME, err := encodeWithin(scale(rgba, tw, th), lim.MaxBytes)
		if err != nil {
			return Image{}, err
		}
		if data != nil {
			return Image{
				Data:  base64.StdEncoding.EncodeToString(data),
				MIME:  outMIME,
				Width: tw, Height: th,
				OriginalWidth: w, OriginalHeight: h,
				Resized: true,
			}, nil
		}
		tw, th = tw/2, th/2
	}
	return Image{}, fmt.Errorf("imaging: %dx%d %s does not fit in %d bytes of base64: %w", w, h, f.mime, lim.MaxBytes, ErrTooLarge)
}

// withDefaults fills the zero fields of lim from DefaultLimits.
func (lim Limits) withDefaults() Limits {
	if lim.MaxWidth <= 0 {
		lim.MaxWidth = DefaultLimits.MaxWidth
	}
	if lim.MaxHeight <= 0 {
		lim.MaxHeight = DefaultLimits.MaxHeight
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultLimits.MaxBytes
	}
	return lim
}

// describe names an input MIME type in error messages.
func describe(mime string) string {
	if mime == "" {
		return "image"
	}
	return mime
}

// fitDims scales w×h down to fit maxW×maxH, keeping the aspect ratio and
// rounding to the nearest pixel (never below one pixel).
func fitDims(w, h, maxW, maxH int) (int, int) {
	if w > maxW {
		h = max(1, int(math.Round(float64(h)*float64(maxW)/float64(w))))
		w = maxW
	}
	if h > maxH {
		w = max(1, int(math.Round(float64(w)*float64(maxH)/float64(h))))
		h = maxH
	}
	return w, h
}

// toRGBA returns img as an *image.RGBA, converting it if needed.
func toRGBA(img image.Image) *image.RGBA {
	if m, ok := img.(*image.RGBA); ok && m.Rect.Min == (image.Point{}) {
		return m
	}
	b := img.Bounds()
	dst := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(dst, dst.Bounds(), img, b.Min, draw.Src)
	return dst
}

// scale returns src resampled to w×h, which must not exceed src's size.
// Large reductions first average k×k blocks, which is fast and avoids
// aliasing, and then finish with a Catmull-Rom filter over less than a
// factor of two.
func scale(src *image.RGBA, w, h int) *image.RGBA {
	if k := min(src.Rect.Dx()/w, src.Rect.Dy()/h); k >= 2 {
		src = boxReduce(src, k)
	}
	if src.Rect.Dx() == w && src.Rect.Dy() == h {
		return src
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
	return dst
}

// boxReduce shrinks src, whose bounds start at the origin, by an integer
// factor k.
//
// Each destination pixel is the mean of a k×k block. The rightmost and bottom
// pixels that do not fill a block are dropped.
func boxReduce(src *image.RGBA, k int) *image.RGBA {
	w, h := src.Rect.Dx()/k, src.Rect.Dy()/k
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	sums := make([]uint32, 4*w)
	area := uint32(k * k)
	for y := 0; y < h; y++ {
		clear(sums)
		for sy := y * k; sy < (y+1)*k; sy++ {
			row := src.Pix[sy*src.Stride : sy*src.Stride+4*w*k]
			for x := 0; x < w; x++ {
				block := row[4*x*k : 4*(x+1)*k]
				s := sums[4*x : 4*x+4 : 4*x+4]
				for i := 0; i < len(block); i += 4 {
					s[0] += uint32(block[i])
					s[1] += uint32(block[i+1])
					s[2] += uint32(block[i+2])
					s[3] += uint32(block[i+3])
				}
			}
		}
		out := dst.Pix[y*dst.Stride : y*dst.Stride+4*w]
		for i, v := range sums {
			out[i] = uint8((v + area/2) / area)
		}
	}
	return dst
}

// errTooBig stops an encoder whose output has outgrown its use.
var errTooBig = errors.New("encoded image too big")

// cappedBuffer is a bytes.Buffer that fails writes beyond limit bytes.
type cappedBuffer struct {
	bytes.Buffer
	limit int
}

// Write implements io.Writer.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		return 0, errTooBig
	}
	return b.Buffer.Write(p)
}

// encodeWithin encodes img as PNG and as JPEG at decreasing qualities, and
// returns the smaller of the two at the first quality where it fits.
//
// It fits when it takes at most maxBytes of base64. PNG wins a tie. The data
// is nil if no quality fits.
func encodeWithin(img *image.RGBA, maxBytes int) ([]byte, string, error) {
	maxLen := maxBytes / 4 * 3 // the longest data whose base64 fits
	flat := flatten(img)
	for i, q := range jpegQualities {
		var jpegBuf bytes.Buffer
		if err := jpeg.Encode(&jpegBuf, flat, &jpeg.Options{Quality: q}); err != nil {
			return nil, "", fmt.Errorf("imaging: encode jpeg: %w", err)
		}
		// The PNG does not depend on the quality: if it does not fit, or
		// loses to the JPEG, at the best quality, only the JPEG can fit.
		// Its encoding stops as soon as it has lost.
		if i == 0 {
			pngBuf := cappedBuffer{limit: min(jpegBuf.Len(), maxLen)}
			err := png.Encode(&pngBuf, img)
			switch {
			case err == nil:
				return pngBuf.Bytes(), "image/png", nil
			case !errors.Is(err, errTooBig):
				return nil, "", fmt.Errorf("imaging: encode png: %w", err)
			}
		}
		if jpegBuf.Len() <= maxLen {
			return jpegBuf.Bytes(), "image/jpeg", nil
		}
	}
	return nil, "", nil
}

// flatten returns img composited over white, as JPEG has no transparency;
// img itself if it is opaque.
func flatten(img *image.RGBA) *image.RGBA {
	if img.Opaque() {
		return img
	}
	dst := image.NewRGBA(img.Bounds())
	draw.Draw(dst, dst.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.Draw(dst, dst.Bounds(), img, img.Bounds().Min, draw.Over)
	return dst
}
