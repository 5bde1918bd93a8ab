// Package filetype tells binary files from text by their content, and names
// their MIME type.
//
// Detection follows boxsh v3. A file is binary when its first bytes:
//
//   - carry the signature of a known binary format, or
//   - contain a NUL byte, or more than 2% of C0 control characters other than
//     whitespace and ESC.
//
// Everything else, UTF-8 and ISO-8859 text alike, is text. UTF-16 text, full
// of NUL bytes, is therefore binary.
//
// The format engine is github.com/gabriel-vasile/mimetype, complemented by the
// signatures of boxsh v3 that it lacks. MIME names follow these rules:
//
//   - Formats that boxsh v3 recognises get the names boxsh v3 uses. For
//     example "image/x-icon" for cursors, "video/x-matroska" for WebM,
//     "application/x-cfb" for every OLE compound file and
//     "application/x-executable" for every ELF file.
//   - Binary formats that boxsh v3 does not know get mimetype's names, where
//     boxsh v3 says "application/octet-stream".
//   - Text is "text/plain", or a more specific text/* type when mimetype finds
//     one ("text/html", "text/x-python", ...). Text formats outside text/*,
//     such as JSON or SVG, are "text/plain", so every text MIME type starts
//     with "text/".
//
// Unlike boxsh v3, a head free of NUL and of suspicious control characters is
// never binary just because a short signature matches (a text file starting
// with "MZ", "ID3" or "BM"). PDF and PostScript are the exception: boxsh v3
// always treats them as binary documents.
package filetype

import (
	"encoding/binary"
	"math/bits"
	"strings"

	"github.com/gabriel-vasile/mimetype"
)

// HeadSize is the number of leading bytes Detect examines.
//
// Callers must pass the first HeadSize bytes of a file, or the whole file if
// it is shorter. A shorter head weakens detection, and bytes beyond HeadSize
// are ignored. It matches the 8 KiB probe of boxsh v3, which covers the tar
// header at offset 257, dozens of MPEG transport-stream packets and a fair
// sample for the text heuristic.
const HeadSize = 8192

// MIME types reported for content without a recognised format.
const (
	mimeEmpty  = "inode/x-empty"
	mimeText   = "text/plain"
	mimeBinary = "application/octet-stream"
)

// Type is what Detect found.
type Type struct {
	// MIME is the detected MIME type, e.g. "image/png" or "text/plain".
	// It never carries parameters. When Binary is false it is either a
	// text/* type or "inode/x-empty" for an empty file.
	MIME string
	// Binary reports whether the content is not text.
	Binary bool
}

// Detect inspects head, the first bytes of a file (see HeadSize), whose full
// size is size.
//
// A size smaller than len(head), as reported for files under /proc, means the
// size is unknown. The size only sharpens a few structural checks and never
// decides emptiness. An empty head is reported as the non-binary type
// "inode/x-empty", as boxsh v3 does.
func Detect(head []byte, size int64) Type {
	t, _ := detectFast(head, size, true)
	return t
}

// detectFast is Detect, whose fast path for clean heads (fastText) is tried
// only when fast is set; byFast tells whether it answered.
func detectFast(head []byte, size int64, fast bool) (t Type, byFast bool) {
	if len(head) > HeadSize {
		head = head[:HeadSize]
	}
	if len(head) == 0 {
		return Type{MIME: mimeEmpty}, false
	}
	if size < int64(len(head)) {
		size = -1
	}
	nul, suspicious, bsvt := controls(head)
	if fast && !nul && suspicious == 0 {
		if mime, ok := fastText(head, bsvt); ok {
			return Type{MIME: mime}, true
		}
	}
	return detect(head, size, nul, suspicious), false
}

// detect is Detect's full path: Detect's own signatures and mimetype's
// tree walk, for a non-empty head of at most HeadSize bytes whose control
// characters controls counted.
func detect(head []byte, size int64, nul bool, suspicious int) Type {
	// Real binary data of any length contains some NUL or suspicious
	// control character, so a clean head that matches a short signature
	// is text that happens to begin like a binary format.
	clean := !nul && suspicious == 0

	// Signatures of boxsh v3 that mimetype lacks or ranks differently.
	if mime, textual, ok := match(leadingSignatures, head, size); ok && (!clean || textual) {
		return Type{MIME: mime, Binary: true}
	}

	m := mimetype.Detect(head)
	name := baseMIME(m.String())
	isText := inTextTree(m)
	if name != mimeBinary && !isText && (!clean || alwaysBinary[name]) {
		if alias, ok := referenceNames[name]; ok {
			name = alias
		}
		return Type{MIME: name, Binary: true}
	}

	// The remaining boxsh v3 signatures, for input mimetype rejected.
	if mime, textual, ok := match(fallbackSignatures, head, size); ok && (!clean || textual) {
		return Type{MIME: mime, Binary: true}
	}

	// The content heuristic of boxsh v3: any NUL byte, or more than 2% of
	// suspicious control characters, makes the content binary. ISO-8859
	// and UTF-8 text pass.
	if nul || suspicious*50 > len(head) {
		return Type{MIME: mimeBinary, Binary: true}
	}
	if isText && strings.HasPrefix(name, "text/") {
		return Type{MIME: name}
	}
	return Type{MIME: mimeText}
}

// baseMIME strips the parameters, such as a charset, from a media type.
func baseMIME(s string) string {
	base, _, _ := strings.Cut(s, ";")
	return strings.TrimSpace(base)
}

// inTextTree reports whether mimetype classified the input as some kind of
// text (text/plain or one of its refinements such as JSON, SVG or HTML).
func inTextTree(m *mimetype.MIME) bool {
	for ; m != nil; m = m.Parent() {
		if m.Is(mimeText) {
			return true
		}
	}
	return false
}

// isSuspicious reports whether c is a C0 control character that does not
// occur in text: everything below 0x20 except BS, HT, LF, VT, FF, CR and ESC.
// NUL is handled separately by the callers.
func isSuspicious(c byte) bool {
	switch {
	case c < 0x08:
		return true
	case c == 0x0e || c == 0x0f:
		return true
	case c >= 0x10 && c < 0x20 && c != 0x1b:
		return true
	}
	return false
}

// Kinds of bytes for controls.
const (
	plainByte      = iota
	nulByte        // NUL
	suspiciousByte // see isSuspicious
	bsvtByte       // backspace or vertical tab, which mimetype's text check refuses
)

// byteKind classifies every byte for controls.
var byteKind = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c == 0:
			t[c] = nulByte
		case isSuspicious(byte(c)):
			t[c] = suspiciousByte
		case c == '\b' || c == '\v':
			t[c] = bsvtByte
		}
	}
	return t
}()

// controls reports whether head holds a NUL byte, how many suspicious
// control characters it holds and whether a backspace or vertical tab
// occurs among its first mimeLimit bytes (both up to the first NUL).
// It looks at the bytes below 0x20 of eight bytes at a time.
func controls(head []byte) (nul bool, suspicious int, bsvt bool) {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(head); i += 8 {
		// (x-0x20*lsb)&^x&msb has the top bit of every byte of x below
		// 0x20 set (bytes >= 0x80 are masked out by ^x); a borrow may set
		// that of a 0x20 above one too, which byteKind finds plain.
		x := binary.LittleEndian.Uint64(head[i:])
		for m := (x - 0x20*lsb) &^ x & msb; m != 0; m &= m - 1 {
			j := i + bits.TrailingZeros64(m)/8
			switch byteKind[head[j]] {
			case nulByte:
				return true, suspicious, bsvt
			case suspiciousByte:
				suspicious++
			case bsvtByte:
				bsvt = bsvt || j < mimeLimit
			}
		}
	}
	for ; i < len(head); i++ {
		switch byteKind[head[i]] {
		case nulByte:
			return true, suspicious, bsvt
		case suspiciousByte:
			suspicious++
		case bsvtByte:
			bsvt = bsvt || i < mimeLimit
		}
	}
	return false, suspicious, bsvt
}
